"""Drives the gated_tools example with the official MCP Python SDK client.

The client sees `end_interview` only; calling it withdraws it and adds
`submit_verdict`. The client must be told of the change (on the GET stream
in the 2025 era, on `subscriptions/listen` in 2026-07-28), re-list, and call
the tool that appeared.

Usage: python list_changed.py legacy|modern, with MCP_URL (the endpoint) and
MCP_BEARER (the bearer text, without "Bearer ") in the environment.

Prints one JSON object per line, tagged "step", as the TypeScript clients
under tests/ do. Exit codes: 0 = all steps ran, 1 = unexpected failure,
2 = global timeout.
"""

import asyncio
import os
import sys

import mcp_types as types
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from steps import emit, fail

NOTICE_WAIT_SECONDS = 10
WATCHDOG_SECONDS = 30


def transport(url, bearer):
    # A static bearer header on every request (POSTs, the GET stream,
    # DELETE); the SDK's OAuth machinery is not used, so a 401 is final.
    http = create_mcp_http_client(headers={"Authorization": "Bearer " + bearer})
    return streamable_http_client(url, http_client=http)


async def legacy(url, bearer):
    notice = asyncio.Event()

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification):
            notice.set()
        elif isinstance(message, Exception):
            print(f"transport error: {message}", file=sys.stderr)

    client = Client(transport(url, bearer), mode="legacy", message_handler=on_message)
    async with client:
        emit(step="connected", era=client.protocol_version)
        await scenario(client, notice.wait)


async def modern(url, bearer):
    # "auto": server/discover first, initialize only if refused. The host
    # answers discover, so the client settles on 2026-07-28.
    client = Client(transport(url, bearer), mode="auto")
    async with client:
        emit(step="connected", era=client.protocol_version)
        async with client.listen(tools_list_changed=True) as subscription:
            events = subscription.__aiter__()

            async def next_change():
                event = await events.__anext__()
                emit(step="event", kind=type(event).__name__)

            await scenario(client, next_change)


async def scenario(client, wait_for_notice):
    tools = await client.list_tools()
    emit(step="tools", names=[tool.name for tool in tools.tools])
    ended = await client.call_tool("end_interview", {})
    emit(step="end_interview", isError=bool(ended.is_error))
    try:
        await asyncio.wait_for(wait_for_notice(), NOTICE_WAIT_SECONDS)
    except asyncio.TimeoutError:
        fail("no notifications/tools/list_changed within 10 s", 1)
    now = await client.list_tools()
    emit(step="relisted", names=[tool.name for tool in now.tools])
    verdict = await client.call_tool("submit_verdict", {"verdict": "hire"})
    emit(step="submit_verdict", isError=bool(verdict.is_error),
         structuredContent=verdict.structured_content)


def describe(err):
    # anyio wraps a failure in a task group in an ExceptionGroup, whose own
    # message says nothing: name what is inside it.
    if isinstance(err, BaseExceptionGroup):
        return "; ".join(describe(inner) for inner in err.exceptions)
    return f"{type(err).__name__}: {err}"


async def main():
    url = os.environ.get("MCP_URL")
    bearer = os.environ.get("MCP_BEARER")
    if not url or bearer is None or len(sys.argv) != 2:
        fail("usage: MCP_URL=… MCP_BEARER=… list_changed.py legacy|modern", 1)
    era = {"legacy": legacy, "modern": modern}.get(sys.argv[1])
    if era is None:
        fail(f"unknown era {sys.argv[1]!r}", 1)
    try:
        await asyncio.wait_for(era(url, bearer), WATCHDOG_SECONDS)
    except asyncio.TimeoutError:
        fail("timeout", 2)
    except Exception as err:  # report, don't trace: the Rust test shows it
        fail(describe(err), 1)
    emit(step="done")


asyncio.run(main())
