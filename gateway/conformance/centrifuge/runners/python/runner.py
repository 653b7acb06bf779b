"""The Python SDK's runner (centrifuge-python): drives the SDK from JSON lines on stdin and reports what it sees
as JSON lines on stdout (gateway/conformance/centrifuge/README.md). `--protobuf` speaks the Protobuf format."""

import asyncio
import json
import sys

from centrifuge import (
    Client,
    ClientEventHandler,
    ReplyError,
    SubscriptionEventHandler,
)

PROTOBUF = "--protobuf" in sys.argv[1:]


def write(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def encode(data):
    """A command's data as the SDK takes it: JSON values over JSON, bytes over Protobuf."""
    return json.dumps(data).encode() if PROTOBUF else data


def decode(data):
    if isinstance(data, (bytes, bytearray)):
        try:
            return json.loads(data)
        except ValueError:
            return data.decode(errors="replace")
    return data


class Runner:
    def __init__(self):
        self.gen = 0  # the scenario's generation: events of an older one are dropped
        self.client = None
        self.subs = {}
        self.last = {}  # per sub, the offset of its last publication
        self.token = ""  # what the token getter hands out (setToken)
        self.sub_tokens = {}  # per channel, what a sub's token getter hands out (setSubToken)

    def event(self, gen, obj):
        if gen == self.gen:
            write(obj)

    async def connect(self, cmd, gen):
        runner = self

        class Events(ClientEventHandler):
            async def on_connecting(self, ctx):
                runner.event(gen, {"event": "connecting", "code": ctx.code, "reason": ctx.reason})

            async def on_connected(self, ctx):
                runner.event(gen, {"event": "connected", "client": ctx.client})

            async def on_disconnected(self, ctx):
                runner.event(gen, {"event": "disconnected", "code": ctx.code, "reason": ctx.reason})

            async def on_error(self, ctx):
                runner.event(gen, {"event": "error", "message": str(ctx.error)})

        async def get_token():
            runner.event(gen, {"event": "tokenRequested"})
            return runner.token

        self.client = Client(
            cmd["url"],
            events=Events(),
            token=cmd["token"],
            get_token=get_token if cmd.get("refresh") else None,
            use_protobuf=PROTOBUF,
            min_reconnect_delay=0.05,
            max_reconnect_delay=0.5,
            proxy=None,
        )
        await self.client.connect()
        await self.client.ready(timeout=15)
        return {"client": self.client.client_id}

    async def subscribe(self, cmd, gen):
        runner, name = self, cmd["sub"]

        class Events(SubscriptionEventHandler):
            async def on_subscribing(self, ctx):
                runner.event(gen, {"event": "subscribing", "sub": name, "code": ctx.code, "reason": ctx.reason})

            async def on_subscribed(self, ctx):
                ev = {
                    "event": "subscribed",
                    "sub": name,
                    "wasRecovering": ctx.was_recovering,
                    "recovered": ctx.recovered,
                    "recoverable": ctx.recoverable,
                    "positioned": ctx.positioned,
                }
                if ctx.stream_position is not None:
                    ev["offset"] = ctx.stream_position.offset
                    ev["epoch"] = ctx.stream_position.epoch
                runner.event(gen, ev)

            async def on_unsubscribed(self, ctx):
                runner.event(gen, {"event": "unsubscribed", "sub": name, "code": ctx.code, "reason": ctx.reason})

            async def on_publication(self, ctx):
                pub = ctx.pub
                ev = {"event": "message", "sub": name, "channel": sub.channel, "seq": pub.offset, "data": decode(pub.data)}
                if name in runner.last:
                    ev["jump"] = pub.offset - runner.last[name]
                runner.last[name] = pub.offset
                runner.event(gen, ev)

            async def on_join(self, ctx):
                runner.event(gen, {"event": "join", "sub": name, "user": ctx.info.user, "client": ctx.info.client})

            async def on_leave(self, ctx):
                runner.event(gen, {"event": "leave", "sub": name, "user": ctx.info.user, "client": ctx.info.client})

            async def on_error(self, ctx):
                runner.event(gen, {"event": "subError", "sub": name, "message": str(ctx.error)})

        async def get_sub_token(channel):
            runner.event(gen, {"event": "subTokenRequested", "sub": name})
            return runner.sub_tokens.get(channel, "")

        sub = self.client.new_subscription(
            cmd["channel"],
            events=Events(),
            get_token=get_sub_token if cmd.get("subToken") else None,
            recoverable=bool(cmd.get("recoverable")),
            positioned=bool(cmd.get("positioned")),
            join_leave=bool(cmd.get("joinLeave")),
        )
        self.subs[name] = sub
        await sub.subscribe()
        return {}

    async def reset(self):
        self.gen += 1
        client, self.client, self.subs, self.last, self.token = self.client, None, {}, {}, ""
        self.sub_tokens = {}
        if client is not None:
            await client.disconnect()
        return {}

    async def handle(self, cmd):
        gen, c, op = self.gen, self.client, cmd["cmd"]
        if op == "connect":
            return await self.connect(cmd, gen)
        if op == "setToken":
            self.token = cmd["token"]
            return {}
        if op == "setSubToken":
            self.sub_tokens[cmd["channel"]] = cmd["token"]
            return {}
        if op in ("reset", "close"):
            return await self.reset()
        if c is None:
            raise RuntimeError("not connected")
        if op == "subscribe":
            return await self.subscribe(cmd, gen)
        if op == "unsubscribe":
            await self.subs[cmd["sub"]].unsubscribe()
            return {}
        if op == "publish":
            await c.publish(cmd["channel"], encode(cmd["data"]), timeout=15)
            return {}
        if op == "presence":
            p = await c.presence(cmd["channel"], timeout=15)
            return {"users": sorted(i.user for i in p.clients.values())}
        if op == "presenceStats":
            s = await c.presence_stats(cmd["channel"], timeout=15)
            return {"numClients": s.num_clients, "numUsers": s.num_users}
        if op == "history":
            h = await c.history(cmd["channel"], limit=cmd.get("limit", 0), reverse=bool(cmd.get("reverse")), timeout=15)
            pubs = [{"offset": p.offset, "data": decode(p.data)} for p in h.publications]
            return {"publications": pubs, "offset": h.offset, "epoch": h.epoch}
        if op == "rpc":
            r = await c.rpc(cmd["method"], encode(cmd.get("data")), timeout=15)
            return {"data": decode(r.data)}
        raise RuntimeError(f"unknown command {op}")

    async def answer(self, cmd):
        try:
            write({"id": cmd["id"], "ok": True, "result": await self.handle(cmd)})
        except ReplyError as e:
            write({"id": cmd["id"], "ok": False, "error": {"code": str(e.code), "temporary": e.temporary, "message": e.message}})
        except Exception as e:  # noqa: BLE001 - every failure is an answer
            write({"id": cmd["id"], "ok": False, "error": {"code": "runner", "temporary": False, "message": repr(e)}})


async def main():
    runner = Runner()
    write({"event": "adapter", "reset": True})
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 24)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    tasks = set()
    while line := await reader.readline():
        cmd = json.loads(line)
        if cmd["cmd"] == "close":
            await runner.answer(cmd)
            return
        # Each command in its own task: a step marked async leaves its command in flight.
        task = asyncio.create_task(runner.answer(cmd))
        tasks.add(task)
        task.add_done_callback(tasks.discard)


asyncio.run(main())
