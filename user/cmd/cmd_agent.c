// SPDX-License-Identifier: MIT
/* `pywalk agent`: the always-on host profiler. Its options (and a config file that mirrors
 * them, `key = value`), the engine at 19 Hz over every Python process by default, and the
 * agent's work (agent.c) in the engine's tick. SIGTERM/SIGINT close the current window
 * and flush the sinks; SIGHUP re-reads the config file, exporting the current window
 * first, and restarts the sinks and the listener with it. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "engine/engine.h"
#include "agent/http.h"
#include "lib/log.h"
#include "lib/util.h"

/* a prime, so that the sampling never locks step with a periodic workload */
#define AGENT_DEFAULT_HZ 19

enum {
	OPT_INTERVAL = 0x3000,
	OPT_EXPORT_DIR,
	OPT_KEEP,
	OPT_KEEP_SIZE,
	OPT_PYROSCOPE,
	OPT_TENANT,
	OPT_PARCA,
	OPT_OTLP,
	OPT_BASIC_AUTH_FILE,
	OPT_TOKEN_FILE,
	OPT_METRICS,
	OPT_METRICS_PUBLIC,
	OPT_HOST,
	OPT_SERVICE,
	OPT_QUEUE_SIZE,
	OPT_FLUSH_TIMEOUT,
	OPT_CONFIG,
	OPT_METRICS_GROUP,
	OPT_METRICS_TOKEN_FILE,
	OPT_METRICS_TLS_CERT,
	OPT_METRICS_TLS_KEY,
	OPT_PULL_SIZE,
};

static const struct option agent_options[] = {
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "export-dir", required_argument, NULL, OPT_EXPORT_DIR },
	{ "keep", required_argument, NULL, OPT_KEEP },
	{ "keep-size", required_argument, NULL, OPT_KEEP_SIZE },
	{ "pyroscope", required_argument, NULL, OPT_PYROSCOPE },
	{ "tenant", required_argument, NULL, OPT_TENANT },
	{ "parca", required_argument, NULL, OPT_PARCA },
	{ "otlp", required_argument, NULL, OPT_OTLP },
	{ "basic-auth-file", required_argument, NULL, OPT_BASIC_AUTH_FILE },
	{ "token-file", required_argument, NULL, OPT_TOKEN_FILE },
	{ "metrics", required_argument, NULL, OPT_METRICS },
	{ "metrics-public", no_argument, NULL, OPT_METRICS_PUBLIC },
	{ "metrics-group", required_argument, NULL, OPT_METRICS_GROUP },
	{ "metrics-token-file", required_argument, NULL, OPT_METRICS_TOKEN_FILE },
	{ "metrics-tls-cert", required_argument, NULL, OPT_METRICS_TLS_CERT },
	{ "metrics-tls-key", required_argument, NULL, OPT_METRICS_TLS_KEY },
	{ "pull-size", required_argument, NULL, OPT_PULL_SIZE },
	{ "host", required_argument, NULL, OPT_HOST },
	{ "service", required_argument, NULL, OPT_SERVICE },
	{ "queue-size", required_argument, NULL, OPT_QUEUE_SIZE },
	{ "flush-timeout", required_argument, NULL, OPT_FLUSH_TIMEOUT },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ 0 },
};

static void agent_help(FILE *f)
{
	fprintf(f,
		"Usage: pywalk agent [options]            (every Python process, 19 Hz)\n"
		"       pywalk agent --config FILE\n\n"
		"Profile continuously and close a window every --interval: one pprof profile per\n"
		"process (cpu/nanoseconds, thread_id and thread_name per sample; service_name,\n"
		"pid, host, container_id, python_version per process) handed to every sink.\n"
		"A sink that is down or slow stalls neither sampling nor another sink: profiles\n"
		"queue in bounded memory and are retried with backoff; the oldest go when full.\n\n");
	cli_help_groups(f, CLI_SAMPLING | CLI_RATE | CLI_NATIVE, AGENT_DEFAULT_HZ);
	fprintf(f,
		"Windows and sinks:\n"
		"      --interval TIME    window length (default 15s; 1s-1h)\n"
		"      --export-dir DIR   one .pb.gz per window and process under DIR\n"
		"      --keep TIME        remove exported files older than TIME (e.g. 24h)\n"
		"      --keep-size SIZE   keep at most SIZE of exported files (e.g. 1G)\n"
		"      --pyroscope URL    Grafana Pyroscope's ingest API at URL\n"
		"      --tenant ID        X-Scope-OrgID for Pyroscope\n"
		"      --parca URL        Parca's HTTP write API at URL\n"
		"      --otlp URL         OTLP profiles over HTTP at URL (the signal is still in\n"
		"                         development upstream)\n"
		"      --basic-auth-file F  'user:password' for the HTTP sinks, read from F\n"
		"      --token-file F     bearer token for the HTTP sinks, read from F\n"
		"      --queue-size SIZE  per sink (default 64M)\n"
		"      --flush-timeout TIME  at shutdown (default 10s)\n"
		"Listener:\n"
		"      --metrics ADDR     serve /metrics (Prometheus) and /debug/pprof/profile\n"
		"                         (?seconds=N&pid=P) on ADDR, e.g. 127.0.0.1:9464 or\n"
		"                         unix:/run/pywalk/agent.sock (mode 0600, root's)\n"
		"      --metrics-group NAME  the unix: socket is group NAME's too (mode 0660)\n"
		"      --metrics-token-file F  every request needs 'Authorization: Bearer'\n"
		"                         the token in F (root's, mode 0600)\n"
		"      --metrics-tls-cert F  serve HTTPS with the PEM certificate (chain) in F\n"
		"      --metrics-tls-key F   and the PEM key in F (root's, mode 0600)\n"
		"      --metrics-public   ADDR may be a non-loopback address without a token\n"
		"      --pull-size SIZE   one pull's memory budget (default 64M)\n"
		"      --host NAME        the host label (default: the host name)\n"
		"      --service GLOB=NAME  file processes whose script, module or comm\n"
		"                         matches GLOB under service NAME (repeat; the first\n"
		"                         match wins; a process's PYROSCOPE_SERVICE_NAME or\n"
		"                         OTEL_SERVICE_NAME wins over every rule)\n"
		"      --config FILE      options from FILE: one 'name = value' per line (the long\n"
		"                         option's name; 'name' alone for a flag; '#' comments);\n"
		"                         the command line wins over the file\n");
	cli_help_other(f, 0);
	fprintf(f,
		"\nSignals: SIGTERM or SIGINT close the current window, flush the sinks within\n"
		"--flush-timeout and exit 0; SIGHUP exports the current window and re-reads\n"
		"--config (sinks, listener and interval change; sampling options need a restart).\n\n"
		"Examples:\n"
		"    pywalk agent --pyroscope http://pyroscope:4040 --metrics 127.0.0.1:9464\n"
		"    pywalk agent --export-dir /var/lib/pywalk --keep 24h\n"
		"    pywalk agent --config /etc/pywalk/agent.conf\n"
		"    go tool pprof -top http://127.0.0.1:9464/debug/pprof/profile?seconds=10\n\n"
		"Exit status: 0 ok (after SIGTERM/SIGINT too), 1 runtime failure, 2 usage error.\n");
}

struct agent_cli {
	struct agent_config c;
	const char *config;
};

#define usage(...) cli_usage_error("agent", __VA_ARGS__)

static int handle_option(void *ctx, int opt, const char *arg)
{
	struct agent_cli *a = ctx;
	struct agent_config *c = &a->c;

	switch (opt) {
	case OPT_INTERVAL:
		if (parse_duration_ms(arg, &c->interval_ms) || c->interval_ms < 1000 ||
		    c->interval_ms > 3600000)
			return usage("invalid --interval '%s' (1s-1h)", arg);
		return 0;
	case OPT_EXPORT_DIR:
		c->export_dir = arg;
		return 0;
	case OPT_KEEP:
		if (parse_duration_ms(arg, &c->keep_ms))
			return usage("invalid --keep '%s' (e.g. 24h, 90m)", arg);
		return 0;
	case OPT_KEEP_SIZE:
		if (parse_size(arg, 1 << 20, (uint64_t)1 << 50, &c->keep_bytes))
			return usage("invalid --keep-size '%s' (e.g. 500M, 2G)", arg);
		return 0;
	case OPT_PYROSCOPE:
		c->pyroscope = arg;
		return 0;
	case OPT_TENANT:
		c->pyroscope_tenant = arg;
		return 0;
	case OPT_PARCA:
		c->parca = arg;
		return 0;
	case OPT_OTLP:
		c->otlp = arg;
		return 0;
	case OPT_BASIC_AUTH_FILE:
		c->basic_auth_file = arg;
		return 0;
	case OPT_TOKEN_FILE:
		c->token_file = arg;
		return 0;
	case OPT_METRICS:
		c->metrics = arg;
		return 0;
	case OPT_METRICS_PUBLIC:
		c->metrics_public = true;
		return 0;
	case OPT_METRICS_GROUP:
		c->metrics_group = arg;
		return 0;
	case OPT_METRICS_TOKEN_FILE:
		c->metrics_token_file = arg;
		return 0;
	case OPT_METRICS_TLS_CERT:
		c->metrics_tls_cert = arg;
		return 0;
	case OPT_METRICS_TLS_KEY:
		c->metrics_tls_key = arg;
		return 0;
	case OPT_PULL_SIZE:
		if (parse_size(arg, 4 << 10, (uint64_t)1 << 40, &c->pull_bytes))
			return usage("invalid --pull-size '%s' (e.g. 64M, 1G)", arg);
		return 0;
	case OPT_HOST:
		c->host = arg;
		return 0;
	case OPT_SERVICE: {
		const char *eq = strrchr(arg, '=');

		/* the name goes into URLs and labels: the same characters a sanitized one has */
		if (!eq || eq == arg || !eq[1] || eq - arg >= 256 || strlen(eq + 1) > 128 ||
		    strspn(eq + 1, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
				   "0123456789-_.") != strlen(eq + 1))
			return usage(
				"invalid --service '%s' (GLOB=NAME; NAME of A-Z a-z 0-9 - _ ., "
				"at most 128)",
				arg);
		if (c->nservice_rules == AGENT_MAX_SERVICE_RULES)
			return usage("too many --service rules (at most 32): %s", arg);
		c->service_rules[c->nservice_rules++] = arg;
		return 0;
	}
	case OPT_QUEUE_SIZE:
		/* down to a few windows of one process: a small host's choice, and what a
		 * test of the queue's overflow needs to see it within seconds */
		if (parse_size(arg, 16 << 10, (uint64_t)1 << 40, &c->queue_bytes))
			return usage("invalid --queue-size '%s' (16K-1T)", arg);
		return 0;
	case OPT_FLUSH_TIMEOUT: {
		uint64_t ms;

		if (parse_duration_ms(arg, &ms) || ms > 600000)
			return usage("invalid --flush-timeout '%s' (up to 10m)", arg);
		c->flush_timeout_s = ms / 1000.0;
		return 0;
	}
	case OPT_CONFIG:
		a->config = arg;
		return 0;
	}
	return 1;
}

/* The arguments a config file stands for: each "name = value" becomes "--name=value", a
 * lone "name" becomes "--name". An unknown name, or a flag given a value, is an error
 * naming the file and line. Returns the number of arguments added to *args (strings
 * malloc'ed), or -1 after printing the error. */
static int read_config(const struct cli_spec *spec, const char *path, char ***args, int *nargs)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	int lineno = 0, added = 0;

	if (!f) {
		pw_err("cannot read config file %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (getline(&line, &cap, f) > 0) {
		char *key = line, *value = NULL, *eq, *end, *arg, **grown;
		int kind;

		lineno++;
		key[strcspn(key, "#\n")] = 0;
		while (*key == ' ' || *key == '\t')
			key++;
		if (!*key)
			continue;
		eq = strchr(key, '=');
		if (eq) {
			*eq = 0;
			value = eq + 1;
			while (*value == ' ' || *value == '\t')
				value++;
			end = value + strlen(value);
			while (end > value && (end[-1] == ' ' || end[-1] == '\t'))
				*--end = 0;
		}
		end = key + strlen(key);
		while (end > key && (end[-1] == ' ' || end[-1] == '\t'))
			*--end = 0;
		kind = strcmp(key, "config") ? cli_option_kind(spec, key) : -1;
		if (kind < 0 || !strcmp(key, "help")) {
			pw_err("%s:%d: unknown setting '%s' (settings are the long options of "
			       "'pywalk agent --help', without the dashes)\n",
			       path, lineno, key);
			goto fail;
		}
		if (kind == 1 && (!value || !*value)) {
			pw_err("%s:%d: '%s' needs a value ('%s = VALUE')\n", path, lineno, key,
			       key);
			goto fail;
		}
		if (kind == 0 && value && *value) {
			pw_err("%s:%d: '%s' takes no value (a line '%s' alone turns it on)\n", path,
			       lineno, key, key);
			goto fail;
		}
		if (asprintf(&arg, kind ? "--%s=%s" : "--%s", key, value) < 0)
			goto fail;
		grown = realloc(*args, (size_t)(*nargs + 2) * sizeof(**args));
		if (!grown) {
			free(arg);
			goto fail;
		}
		*args = grown;
		(*args)[(*nargs)++] = arg;
		(*args)[*nargs] = NULL;
		added++;
	}
	free(line);
	fclose(f);
	return added;
fail:
	free(line);
	fclose(f);
	return -1;
}

struct agent_state {
	struct agent *agent;
	struct agent_cli cli;
	const struct cli_spec *spec;
	int argc;
	char **argv;
	char **args; /* the merged arguments the configuration points into */
	int nargs;
};

/* argv with the config file's arguments first (the command line wins), parsed. */
static int parse_all(const struct cli_spec *spec, int argc, char **argv, struct agent_cli *cli,
		     struct cli_sampling *s, char ***merged, int *nmerged)
{
	struct cli_spec mine = *spec;
	const char *config = NULL;
	int ret;

	/* the config file's name comes from the command line alone */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strncmp(argv[i], "--config=", 9))
			config = argv[i] + 9;
		else if (!strcmp(argv[i], "--config") && i + 1 < argc)
			config = argv[++i];
	}
	*merged = calloc(2, sizeof(**merged));
	*nmerged = 0;
	if (!*merged)
		return EXIT_FAIL;
	(*merged)[(*nmerged)++] = strdup(argv[0]);
	if (config && read_config(spec, config, merged, nmerged) < 0)
		return EXIT_USAGE;
	for (int i = 1; i < argc; i++) {
		*merged = realloc(*merged, (size_t)(*nmerged + 2) * sizeof(**merged));
		if (!*merged)
			return EXIT_FAIL;
		(*merged)[(*nmerged)++] = strdup(argv[i]);
		(*merged)[*nmerged] = NULL;
	}
	memset(cli, 0, sizeof(*cli));
	cli->c.interval_ms = 15000;
	mine.ctx = cli;
	ret = cli_parse(*nmerged, *merged, &mine, s, NULL);
	if (ret >= 0)
		return ret;
	if (s->command)
		return usage("%s", "the agent takes no command: give -p PID or --all");
	if (!cli->c.export_dir && !cli->c.pyroscope && !cli->c.parca && !cli->c.otlp &&
	    !cli->c.metrics)
		return usage("%s", "nowhere to send profiles: give --export-dir, --pyroscope, "
				   "--parca, --otlp or --metrics");
	if ((cli->c.keep_ms || cli->c.keep_bytes) && !cli->c.export_dir)
		return usage("%s", "--keep and --keep-size need --export-dir");
	return -1;
}

static void free_args(char **args, int n)
{
	for (int i = 0; args && i < n; i++)
		free(args[i]);
	free(args);
}

static int agent_tick(void *ctx, struct engine *e, uint64_t now)
{
	struct agent_state *st = ctx;
	struct agent_cli fresh;
	struct cli_sampling s;
	struct agent_totals totals;
	char **args = NULL;
	int nargs = 0, err;

	err = agent__tick(st->agent, now);
	if (err) {
		pw_err("closing a window failed: %s\n", strerror(-err));
		return err;
	}
	if (!engine__take_reload(e))
		return 0;
	/* SIGHUP: nothing of the current window is lost, then the new settings */
	pw_info("SIGHUP: exporting the current window, re-reading the configuration\n");
	if (parse_all(st->spec, st->argc, st->argv, &fresh, &s, &args, &nargs) >= 0) {
		pw_warn("the new configuration is not valid: keeping the old one\n");
		free_args(args, nargs);
		return 0;
	}
	agent__close_window(st->agent);
	/* the old agent holds the listener and the sinks the new one may reuse: it goes
	 * first, and comes back if the new settings cannot be brought up (a directory
	 * refused, a port taken) */
	agent__free(st->agent, &totals);
	st->agent = agent__new(&fresh.c, e);
	if (!st->agent) {
		pw_warn("the new configuration cannot be applied: keeping the old one\n");
		free_args(args, nargs);
		st->agent = agent__new(&st->cli.c, e);
		if (!st->agent)
			return -EINVAL;
		agent__carry(st->agent, &totals);
		return 0;
	}
	agent__carry(st->agent, &totals);
	/* the new configuration's strings live in the new arguments */
	free_args(st->args, st->nargs);
	st->args = args;
	st->nargs = nargs;
	st->cli = fresh;
	return 0;
}

int cmd_agent(int argc, char **argv)
{
	struct agent_state st = { .argc = argc, .argv = argv };
	struct cli_spec spec = { .name = "agent",
				 .groups = CLI_SAMPLING | CLI_RATE | CLI_NATIVE,
				 .default_hz = AGENT_DEFAULT_HZ,
				 .default_all = true,
				 .options = agent_options,
				 .handle = handle_option,
				 .help = agent_help,
				 .ctx = &st.cli };
	struct engine_hook hook = { .tick = agent_tick, .poll_ms = 100, .ctx = &st };
	struct engine_counts counts;
	struct cli_sampling s;
	struct engine *e = NULL;
	int ret;

	st.spec = &spec;
	if (http_global_init()) {
		pw_err("cannot initialize libcurl\n");
		return EXIT_FAIL;
	}
	ret = parse_all(&spec, argc, argv, &st.cli, &s, &st.args, &st.nargs);
	if (ret >= 0) {
		free_args(st.args, st.nargs);
		return ret;
	}
	ret = EXIT_FAIL;
	e = engine__new(&(struct engine_opts){
		.sampling = &s, .profile = { .by_process = true }, .hup_reloads = true });
	if (!e)
		goto out;
	if (engine__start(e))
		goto out;
	st.agent = agent__new(&st.cli.c, e);
	if (!st.agent)
		goto out;
	pw_info("agent: sampling every Python process%s at %u Hz, a window every %llu s\n",
		s.all ? "" : " named", s.frequency_hz,
		(unsigned long long)(st.cli.c.interval_ms / 1000));
	if (engine__run(e, &hook) < 0 || engine__finish(e))
		goto out;
	/* the last window: what was sampled up to the signal */
	if (agent__close_window(st.agent))
		pw_err("closing the last window failed\n");
	if (!engine__read_counts(e, &counts))
		engine__print_summary(e, &counts);
	ret = EXIT_OK;
out:
	agent__free(st.agent, NULL);
	engine__free(e);
	free_args(st.args, st.nargs);
	return ret;
}
