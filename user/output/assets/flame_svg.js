// SPDX-License-Identifier: MIT
// pywalk's SVG flame graph script. user/out_svg.c embeds this file in a CDATA section of the
// SVG. The graph is complete without it (boxes, labels, <title> tooltips); this adds click to
// zoom, search and reset. Names are read from the <title> elements as text and written back
// only through textContent, so nothing from a profile is ever parsed as markup or code.
"use strict";
(function () {
  var svg = document.documentElement;
  var W = +svg.getAttribute("data-inner-width"), LEFT = +svg.getAttribute("data-left");
  var CHAR_W = +svg.getAttribute("data-char-width");
  var HIT = "rgb(230,0,230)";
  var $ = function (id) { return document.getElementById(id); };
  var details = $("details"), matchedText = $("matched"), resetText = $("reset");
  var boxes = [], root = null, zoomed = null, query = "", matched = null;

  Array.prototype.forEach.call(document.querySelectorAll("g.f"), function (g) {
    var title = g.querySelector("title").textContent;
    var b = {
      g: g, rect: g.querySelector("rect"), text: g.querySelector("text"),
      // the title is "LABEL\nN samples (P%)": the label is all before the last line break
      label: title.slice(0, title.lastIndexOf("\n")), info: title,
      s: +g.getAttribute("data-s"), n: +g.getAttribute("data-n"), d: +g.getAttribute("data-d"),
      fill: g.querySelector("rect").getAttribute("fill"),
    };
    boxes.push(b);
    if (b.d === 0) root = b;
    g.addEventListener("click", function () { zoom(b); });
    g.addEventListener("mouseover", function () { details.textContent = b.info.replace("\n", ": "); });
    g.addEventListener("mouseout", function () { details.textContent = " "; });
  });

  // the label cut to what fits in w pixels, as out_svg.c cuts it
  function fit(label, w) {
    var chars = Math.floor((w - 6) / CHAR_W), cps = Array.from(label);
    if (chars < 3) return "";
    return cps.length <= chars ? label : cps.slice(0, chars - 2).join("") + "..";
  }

  function place(b, x, w, shown) {
    b.g.style.display = shown ? "" : "none";
    if (!shown) return;
    b.rect.setAttribute("x", x.toFixed(2));
    b.rect.setAttribute("width", w.toFixed(2));
    b.text.setAttribute("x", (x + 3).toFixed(2));
    b.text.textContent = fit(b.label, w);
  }

  function zoom(z) {
    zoomed = z;
    boxes.forEach(function (b) {
      var inside = b.d >= z.d && b.s >= z.s && b.s + b.n <= z.s + z.n;
      var below = b.d < z.d && b.s <= z.s && b.s + b.n >= z.s + z.n;
      if (inside) place(b, LEFT + (b.s - z.s) / z.n * W, b.n / z.n * W, true);
      else place(b, LEFT, W, below);
      b.g.style.opacity = below ? "0.6" : "";
    });
    resetText.style.opacity = z === root ? "0.3" : "1";
  }

  function search(q) {
    query = String(q || "").toLowerCase();
    var hits = [];
    boxes.forEach(function (b) {
      var hit = query !== "" && b.label.toLowerCase().indexOf(query) >= 0;
      b.rect.setAttribute("fill", hit ? HIT : b.fill);
      if (hit) hits.push(b);
    });
    // a match inside another match is counted once: the union of their sample ranges
    hits.sort(function (a, b) { return a.s - b.s || b.n - a.n; });
    var sum = 0, end = -1;
    hits.forEach(function (b) {
      if (b.s >= end) { sum += b.n; end = b.s + b.n; }
      else if (b.s + b.n > end) { sum += b.s + b.n - end; end = b.s + b.n; }
    });
    matched = query === "" ? null : (root && root.n ? 100 * sum / root.n : 0);
    matchedText.textContent = matched === null ? "" : "Matched: " + matched.toFixed(1) + "%";
  }

  $("search").addEventListener("click", function () {
    var q = window.prompt("Search (part of a function or file name):", query);
    if (q !== null) search(q);
  });
  resetText.addEventListener("click", function () { if (root) zoom(root); });
  document.addEventListener("keydown", function (e) {
    if (e.key === "Escape" && root) zoom(root);
    if ((e.ctrlKey || e.metaKey) && e.key === "f") {
      e.preventDefault();
      $("search").dispatchEvent(new MouseEvent("click"));
    }
  });
  if (root) zoom(root);

  // for tests and the console
  window.pywalkSvg = {
    zoom: function (label) {
      var b = boxes.filter(function (x) { return x.label === label; })[0];
      if (b) zoom(b);
      return !!b;
    },
    search: search,
    matched: function () { return matched; },
    zoomed: function () { return zoomed ? zoomed.label : null; },
  };
})();
