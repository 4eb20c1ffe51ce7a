"""A tiny MCP-capable CLI whose behaviour the runner tests choose: it connects to the episode's
stdio MCP server with the official client, then does what ``mode`` says.

    fake_cli.py MODE CONFIG PROMPT

``CONFIG`` is a JSON file the runner wrote from the adapter: ``{"command", "args", "env"}`` of the
MCP server, as a real harness's MCP configuration would hold them.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time

from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

FINISH = {"status": "completed", "summary": "done", "uncertain_operations": []}


async def main(mode: str, config: str, prompt: str) -> None:
    if mode == "env":  # show what the CLI was given, then finish normally
        print(json.dumps({"env": dict(os.environ), "cwd": os.getcwd(),
                          "cwd_entries": os.listdir("."), "argv": sys.argv}), flush=True)
    with open(config, encoding="utf-8") as handle:
        server = json.load(handle)
    parameters = StdioServerParameters(command=server["command"], args=server["args"],
                                       env=server["env"])
    async with Client(stdio_client(parameters)) as client:
        tools = (await client.list_tools()).tools
        print(json.dumps({"type": "usage", "prompt": 100, "completion": 7, "cached": 40}),
              flush=True)
        if mode == "sigkill":
            os.kill(os.getpid(), signal.SIGKILL)
        await client.call_tool("wait", {"seconds": 3})
        print(json.dumps({"type": "usage", "prompt": 200, "completion": 5, "cached": 60}),
              flush=True)
        if mode == "per-turn":  # usage per turn, one log line per request to the model
            for _ in range(3):
                print("fake: model request sent", file=sys.stderr, flush=True)
        if mode == "no-finish":
            return
        if mode == "reconnecting":  # a CLI that never gives up on an unreachable gateway
            while True:
                print(json.dumps({"type": "error", "message": "Reconnecting..."}), flush=True)
                time.sleep(0.2)
        if mode == "exit-1":  # a CLI whose gateway is down: it says so and exits 1
            print("Error: stream disconnected before completion: connection refused",
                  file=sys.stderr, flush=True)
            os._exit(1)  # at once, as a crashed CLI does (no clean-up traceback)
        if mode == "gateway-down":
            print("Error: model call failed after 3 retries (HTTP 503)", flush=True)
            return
        await client.call_tool("finish", FINISH)
        print(json.dumps({"type": "tools", "names": [t.name for t in tools]}), flush=True)
    if mode == "linger":
        time.sleep(120)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
