"""Probes a2a-sdk 1.3.0's server on 127.0.0.1 with the calls faultline models, and prints
what it answered as one JSON object (read by tests/sdk_probes.rs, which compares each answer
with faultline's protocol model, src/world/task/protocol.rs).

The agent: a message "done" completes at once; "work:S" works S seconds and completes;
"ignore:S" works S seconds in a task of its own that the agent does not stop on a cancel (its
cancel() does nothing), so the work goes on after the cancel. Every request is raw JSON-RPC
over HTTP (A2A-Version: 1.0), so the codes printed are the server's own.

Run with a handler: `python3 a2a_probe.py` (DefaultRequestHandler, the default) or
`python3 a2a_probe.py legacy` (LegacyRequestHandler). Exits 3 when a2a-sdk is missing."""

import asyncio
import json
import socket
import sys
import time
import uuid

try:
    import httpx
    import uvicorn
    from starlette.applications import Starlette

    from a2a.server.agent_execution import AgentExecutor
    from a2a.server.request_handlers import DefaultRequestHandler, LegacyRequestHandler
    from a2a.server.routes import create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
    from a2a.helpers.proto_helpers import new_task_from_user_message, get_message_text
    from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface
except ImportError as e:  # pragma: no cover
    print(json.dumps({"missing": str(e)}))
    sys.exit(3)

WORK_DONE = {}  # task id -> the moment the agent's work ended (it went on after a cancel)


class Agent(AgentExecutor):
    async def execute(self, context, event_queue):
        text = get_message_text(context.message)
        task = context.current_task or new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        if text == "done":
            await updater.complete()
            return
        kind, seconds = text.split(":")
        seconds = float(seconds)
        if kind == "work":
            await asyncio.sleep(seconds)
            await updater.complete()
            return

        # "ignore": the work runs in its own asyncio task, which a cancel does not reach.
        async def work():
            await asyncio.sleep(seconds)
            WORK_DONE[task.id] = time.monotonic()
            try:
                await updater.complete()
            except Exception:
                pass  # the queue may be closed by then: the work ended all the same

        runner = asyncio.ensure_future(work())
        await asyncio.shield(runner)

    async def cancel(self, context, event_queue):
        # This agent ignores cancels: it neither stops its work nor writes a state.
        return None


def card(url):
    return AgentCard(
        name="probe",
        description="faultline's SDK probe",
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
    )


async def main(handler_name):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/"
    handler_class = LegacyRequestHandler if handler_name == "legacy" else DefaultRequestHandler
    handler = handler_class(agent_executor=Agent(), task_store=InMemoryTaskStore(), agent_card=card(url))
    app = Starlette(routes=create_jsonrpc_routes(handler, rpc_url="/"))
    server = uvicorn.Server(uvicorn.Config(app, log_level="critical", lifespan="off"))
    serving = asyncio.ensure_future(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)

    out = {"handler": handler_name}
    async with httpx.AsyncClient(timeout=20, headers={"A2A-Version": "1.0"}) as http:
        ids = iter(range(1, 1000))

        async def rpc(method, params, timeout=20):
            body = {"jsonrpc": "2.0", "id": next(ids), "method": method, "params": params}
            start = time.monotonic()
            r = await http.post(url, json=body, timeout=timeout)
            took = time.monotonic() - start
            if r.headers.get("content-type", "").startswith("text/event-stream"):
                # A stream: its first event (or error) is what the server answered with.
                for line in r.text.splitlines():
                    if line.startswith("data:"):
                        return json.loads(line[5:]), took
                return {}, took
            return r.json(), took

        def message(text, message_id=None):
            return {"messageId": message_id or str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}

        def state(answer):
            result = answer.get("result", {})
            task = result.get("task", result)
            return task.get("status", {}).get("state")

        def error(answer):
            e = answer.get("error")
            return None if e is None else {"code": e["code"], "message": e.get("message", "")}

        def task_id(answer):
            result = answer.get("result", {})
            return result.get("task", result).get("id")

        # A send with no configuration blocks until the task ends: a task of 0.5 s of work
        # answers COMPLETED about 0.5 s later. With returnImmediately it answers at once, WORKING.
        blocking, took = await rpc("SendMessage", {"message": message("work:0.5")})
        out["send_default"] = {"state": state(blocking), "seconds": round(took, 2)}
        quick, took = await rpc(
            "SendMessage", {"message": message("work:0.5"), "configuration": {"returnImmediately": True}}
        )
        out["send_return_immediately"] = {"state": state(quick), "seconds": round(took, 2)}

        # Calls about a completed task.
        done, _ = await rpc("SendMessage", {"message": message("done")})
        done_id = task_id(done)
        out["completed_state"] = state(done)
        answer, _ = await rpc("CancelTask", {"id": done_id})
        out["cancel_completed"] = {"error": error(answer)}
        answer, _ = await rpc("SubscribeToTask", {"id": done_id})
        out["subscribe_completed"] = {"error": error(answer)}
        answer, _ = await rpc("GetTask", {"id": done_id})
        out["get_completed"] = {"state": state(answer), "error": error(answer)}

        # Calls about a task the server never made.
        unknown = str(uuid.uuid4())
        for method in ("GetTask", "CancelTask", "SubscribeToTask"):
            answer, _ = await rpc(method, {"id": unknown})
            out[f"{method}_unknown"] = {"error": error(answer)}

        # The same messageId sent twice.
        repeated = str(uuid.uuid4())
        first, _ = await rpc("SendMessage", {"message": message("done", repeated)})
        second, _ = await rpc("SendMessage", {"message": message("done", repeated)})
        out["repeated_message_id"] = {
            "first": task_id(first),
            "second": task_id(second),
            "second_error": error(second),
            "tasks": len({task_id(first), task_id(second)} - {None}),
        }

        # A cancel the agent ignores: its work goes on 1 s after the cancel's answer.
        working, _ = await rpc(
            "SendMessage", {"message": message("ignore:1.0"), "configuration": {"returnImmediately": True}}
        )
        working_id = task_id(working)
        await asyncio.sleep(0.2)
        answer, _ = await rpc("CancelTask", {"id": working_id})
        after, _ = await rpc("GetTask", {"id": working_id})
        await asyncio.sleep(1.5)
        later, _ = await rpc("GetTask", {"id": working_id})
        out["cancel_ignored"] = {
            "state": state(answer),
            "error": error(answer),
            "state_after": state(after),
            "work_went_on": working_id in WORK_DONE,
            "state_after_work": state(later),
        }

    server.should_exit = True
    await serving
    return out


if __name__ == "__main__":
    handler = sys.argv[1] if len(sys.argv) > 1 else "default"
    print(json.dumps(asyncio.run(main(handler)), sort_keys=True))
