"""Calls one tool with the official MCP Python SDK client inside an
OpenTelemetry span, the OpenTelemetry SDK active: the client injects the
span's W3C trace context into the request's `_meta` by itself.

Usage: python traced_call.py legacy|modern TOOL, with MCP_URL (the endpoint)
and MCP_BEARER (the bearer text, without "Bearer ") in the environment.

Prints one JSON object per line, tagged "step", as list_changed.py does:
"span" with the trace id of the span the call was made in, then "called"
with the tool's text. Exit codes: 0 = done, 1 = failure, 2 = timeout.
"""

import asyncio
import os
import sys

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from steps import emit, fail

WATCHDOG_SECONDS = 30


async def call(url, bearer, mode, tool):
    http = create_mcp_http_client(headers={"Authorization": "Bearer " + bearer})
    client = Client(streamable_http_client(url, http_client=http), mode=mode)
    tracer = trace.get_tracer("embacle-tool-host-tests")
    async with client:
        # The agent's turn: the call is made inside its span.
        with tracer.start_as_current_span("agent turn") as span:
            emit(step="span", traceId=format(span.get_span_context().trace_id, "032x"))
            result = await client.call_tool(tool, {})
    emit(step="called", isError=bool(result.is_error), text=result.content[0].text)


async def main():
    url = os.environ.get("MCP_URL")
    bearer = os.environ.get("MCP_BEARER")
    if not url or bearer is None or len(sys.argv) != 3:
        fail("usage: MCP_URL=… MCP_BEARER=… traced_call.py legacy|auto TOOL", 1)
    trace.set_tracer_provider(TracerProvider())
    try:
        await asyncio.wait_for(call(url, bearer, sys.argv[1], sys.argv[2]), WATCHDOG_SECONDS)
    except asyncio.TimeoutError:
        fail("timeout", 2)
    except Exception as err:  # report, don't trace: the Rust test shows it
        fail(f"{type(err).__name__}: {err}", 1)


asyncio.run(main())
