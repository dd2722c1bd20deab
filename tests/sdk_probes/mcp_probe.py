"""Probes the mcp package's (1.30.0) tasks on 127.0.0.1 (streamable HTTP) with the calls
faultline models, and prints what it answered as one JSON object (read by
tests/sdk_probes.rs, which compares each answer with faultline's protocol model).

The tool `work` runs `seconds` in the background as a task (a task-augmented tools/call, with
the client's `ttl` in ms); its work is not stopped by a cancel, so it goes on after one. Exits 3
when the mcp package is missing."""

import json
import socket
import sys
import time

try:
    import anyio
    import uvicorn
    from starlette.applications import Starlette
    from starlette.routing import Mount

    import mcp.types as types
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamablehttp_client
    from mcp.server.lowlevel import Server
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.shared.exceptions import McpError
except ImportError as e:  # pragma: no cover
    print(json.dumps({"missing": str(e)}))
    sys.exit(3)

WORK_DONE = set()  # task ids whose work ran to its end


def build_server():
    server = Server("probe")
    server.experimental.enable_tasks()

    @server.list_tools()
    async def list_tools():
        return [
            types.Tool(
                name="work",
                inputSchema={"type": "object", "properties": {"seconds": {"type": "number"}}},
                execution=types.ToolExecution(taskSupport="optional"),
            )
        ]

    @server.call_tool()
    async def call_tool(name, arguments):
        ctx = server.request_context

        async def work(task):
            # Not stopped by a cancel: this work runs to its end whatever the task's status.
            await anyio.sleep(float(arguments["seconds"]))
            WORK_DONE.add(task.task_id)
            stored = await server.experimental.task_support.store.get_task(task.task_id)
            if stored is not None and stored.status == "cancelled":
                # mcp 1.30.0's run_task completes the task when its work returns, reading a
                # stale copy of its status: the store refuses to leave `cancelled`, and the
                # error ends the whole session. The work has ended; it parks instead.
                await anyio.sleep_forever()
            return types.CallToolResult(content=[types.TextContent(type="text", text="done")])

        return await ctx.experimental.run_task(work)

    return server


async def main():
    server = build_server()
    manager = StreamableHTTPSessionManager(app=server)

    async def handle(scope, receive, send):
        await manager.handle_request(scope, receive, send)

    app = Starlette(routes=[Mount("/mcp", app=handle)])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    uv = uvicorn.Server(uvicorn.Config(app, log_level="critical", lifespan="off"))
    out = {}
    async with manager.run(), anyio.create_task_group() as tg:
        tg.start_soon(lambda: uv.serve(sockets=[sock]))
        while not uv.started:
            await anyio.sleep(0.01)
        async with streamablehttp_client(f"http://127.0.0.1:{port}/mcp/") as (read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tasks = session.experimental

                async def call(seconds, ttl=60000):
                    start = time.monotonic()
                    created = await tasks.call_tool_as_task("work", {"seconds": seconds}, ttl=ttl)
                    return created, time.monotonic() - start

                async def attempt(coro):
                    try:
                        result = await coro
                        return {"status": getattr(result, "status", None), "error": None}
                    except McpError as e:
                        return {"status": None, "error": {"code": e.error.code, "message": e.error.message}}

                # A task-augmented tools/call answers CreateTaskResult at once, `working`.
                created, took = await call(0.5)
                out["create"] = {"status": created.task.status, "seconds": round(took, 2)}

                # tasks/cancel of a working task whose work goes on.
                cancelled = await attempt(tasks.cancel_task(created.task.taskId))
                after = await attempt(tasks.get_task(created.task.taskId))
                await anyio.sleep(0.8)
                later = await attempt(tasks.get_task(created.task.taskId))
                out["cancel_working"] = {
                    **cancelled,
                    "status_after": after["status"],
                    "work_went_on": created.task.taskId in WORK_DONE,
                    "status_after_work": later["status"],
                }

                # Calls about a completed task.
                done, _ = await call(0.0)
                await anyio.sleep(0.2)
                out["completed"] = await attempt(tasks.get_task(done.task.taskId))
                out["cancel_completed"] = await attempt(tasks.cancel_task(done.task.taskId))
                out["get_unknown"] = await attempt(tasks.get_task("no-such-task"))
                out["cancel_unknown"] = await attempt(tasks.cancel_task("no-such-task"))

                # tasks/list takes a cursor and nothing else to look a task up by: its params
                # beyond those every request has (_meta, the task augmentation).
                params = types.ListTasksRequest.model_fields["params"].annotation.__args__[0]
                out["list_params"] = sorted(set(params.model_fields) - set(types.RequestParams.model_fields))

                # ttl: a task that ended is deleted ttl after its end; a get then is -32602.
                short, _ = await call(0.0, ttl=300)
                await anyio.sleep(0.1)
                out["ttl_before"] = await attempt(tasks.get_task(short.task.taskId))
                await anyio.sleep(0.6)
                out["ttl_after"] = await attempt(tasks.get_task(short.task.taskId))
                out["ttl_cancel_after"] = await attempt(tasks.cancel_task(short.task.taskId))
        uv.should_exit = True
    return out


if __name__ == "__main__":
    print(json.dumps(anyio.run(main), sort_keys=True))
