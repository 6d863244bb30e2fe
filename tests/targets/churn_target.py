# SPDX-License-Identifier: MIT
"""Generator and coroutine churn with recursion that swings the stack depth quickly.
Every stack it can have follows the call edges below; the test checks each shipped stack
against them (tests/e2e/test_deep.py).
"""
import time


def leaf():
    acc = 0
    for i in range(300): acc = (acc * 31 + i) & 0xFFFF  # @leaf
    return acc


def descend(n):
    if n == 0:
        return leaf()  # @descend_base
    return descend(n - 1)  # @descend_call


def gen(k):
    for i in range(k):
        yield descend(i % 64)  # @gen_yield


async def sub(i):
    return descend(i % 32)  # @sub_call


async def coro(k):
    total = 0
    for i in range(k):
        total += await sub(i)  # @coro_await
    return total


def run_coro(k):
    c = coro(k)  # @coro_create
    try:
        c.send(None)  # @coro_send
    except StopIteration as stop:
        return stop.value


print("READY", flush=True)
while True:
    for _ in gen(200): pass  # @main_gen
    run_coro(100)  # @main_coro
