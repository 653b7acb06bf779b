import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import { anonymousIdentity, publishedBy, type AccessControl, type Identity } from "../auth/access.js";
import { apiKeyPrincipal } from "../auth/principal.js";
import type { Broker, Bus } from "../broker/broker.js";
import type { ControlSection } from "../config/sections/index.js";
import { WIRE_ERRORS } from "../errors.js";
import type { Logger } from "../log.js";
import type { Counter } from "prom-client";
import { ErrorCode } from "../protocol/codes.js";
import type { PublishService } from "../publish/service.js";
import { gather } from "./gather.js";
import type { LocalControl } from "./local.js";
import type { UserSocketDoor } from "../ws/user-sockets.js";
import {
  CONTROL_OPS,
  mergeParts,
  parseControlRequest,
  type Answerer,
  type BroadcastRequest,
  type ControlOp,
  type WorkerReply,
  type ReplayRequest,
  type WorkerRequest,
} from "./ops.js";

/** An answer: the HTTP status and the JSON body (the NATS reply is the body alone). */
export type ControlAnswer = { status: number; body: Record<string, unknown> };

/** Backends request `<prefix>.server.<op>`: one worker of any instance (this queue group) takes it. */
export const serverSubject = (prefix: string, op: ControlOp): string => `${prefix}.server.${op}`;
/** The worker that took it asks every worker of every instance on `<prefix>.worker.<op>` and gathers. */
export const workerSubject = (prefix: string, op: ControlOp): string => `${prefix}.worker.${op}`;
export const CONTROL_QUEUE = "fgw-control";

export type ControlDeps = {
  broker: Pick<Broker, "kind" | "bus" | "replayEvents">;
  /** The events stream, when this deployment sends an events webhook (EVENTS_WEBHOOK_URL): events/replay needs it. */
  eventsStream?: string;
  /** `fanout_control_requests_total{op,result}`. */
  requests: Counter<"op" | "result">;
  local: LocalControl;
  publisher: PublishService;
  /** The authorization chain: a broadcast's channels pass it as publishes of the caller. */
  access: AccessControl;
  config: ControlSection & { maxChannels: number };
  /** This worker, as its answers name it. */
  self: Answerer;
  log: Logger;
};

/**
 * Who a request on the bus (`<prefix>.server.<op>`) is: a backend that may use the control subjects holds
 * NATS' trust, as an admin key does. The admin listener passes on requests of callers that are no key (with
 * authentication off) with `"asAnonymous":true`: their broadcasts pass the chain as an anonymous client's.
 */
const BUS_IDENTITY: Identity = Object.freeze({ principal: apiKeyPrincipal(["admin"]), ip: "", identified: true, trusted: true });
export const busIdentityOf = (raw: unknown): Identity =>
  (raw as { asAnonymous?: unknown } | undefined)?.asAnonymous === true ? anonymousIdentity("") : BUS_IDENTITY;

export const failure = (code: ErrorCode, message: string): ControlAnswer => ({
  status: WIRE_ERRORS[code].status,
  body: { error: code, message, temporary: WIRE_ERRORS[code].temporary },
});

const encode = (v: unknown): Uint8Array => Buffer.from(JSON.stringify(v));
function decode(b: Uint8Array): unknown {
  try {
    return JSON.parse(Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("utf8")) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * A worker's side of the control plane. It answers its part of every operation on `<prefix>.worker.<op>`
 * (every worker subscribes: no queue group), and takes requests as a door: from HTTP (`call`) or from
 * backends on `<prefix>.server.<op>` (a queue group: one worker of all instances answers each). A door
 * gathers the workers' parts (control/gather.ts) and merges them; a broadcast it publishes itself.
 */
export class ControlService {
  constructor(private readonly d: ControlDeps) {}

  /** Another door's WebSockets (the Centrifuge door's): the control plane reaches them as it reaches /ws's. */
  addDoor(door: UserSocketDoor): void {
    this.d.local.addDoor(door);
  }

  /** Subscribes to the control subjects (a broker without a bus has none: only broadcast is served, over HTTP). */
  start(): void {
    const bus = this.d.broker.bus;
    if (!bus) return;
    const prefix = this.d.config.subjectPrefix;
    for (const op of CONTROL_OPS) {
      bus.serve(
        serverSubject(prefix, op),
        async (b) => {
          const raw = decode(b);
          return encode((await this.call(op, raw, busIdentityOf(raw))).body);
        },
        CONTROL_QUEUE,
      );
      if (op !== "broadcast" && op !== "events/replay") bus.serve(workerSubject(prefix, op), async (b) => encode(await this.partOrError(op, b)));
    }
  }

  /**
   * One request of `op` (a parsed JSON body, or a query as an object), its door already having let `as` into
   * the control plane.
   */
  async call(op: ControlOp, raw: unknown, as: Identity): Promise<ControlAnswer> {
    const a = await this.answer(op, raw, as);
    const error = a.body.error;
    this.d.requests.labels(op, typeof error === "string" ? error : a.body.complete === false ? "incomplete" : "ok").inc();
    return a;
  }

  private async answer(op: ControlOp, raw: unknown, as: Identity): Promise<ControlAnswer> {
    try {
      const req = parseControlRequest(op, raw, this.d.config.maxChannels);
      if ("error" in req) return failure(ErrorCode.BadRequest, req.error);
      if (req.op === "broadcast") return await this.broadcast(req, as);
      if (req.op === "events/replay") return await this.replay(req);
      const bus = this.d.broker.bus;
      if (!bus) return failure(ErrorCode.UnsupportedByBroker, `the ${this.d.broker.kind} broker carries no control requests: ${op} needs JetStream (NATS)`);
      return await this.scatter(bus, req);
    } catch (e) {
      this.d.log.error({ err: e, op }, "control request failed");
      return failure(ErrorCode.Internal, "internal error");
    }
  }

  private async scatter(bus: Bus, req: WorkerRequest): Promise<ControlAnswer> {
    const { timeoutMs, settleMs, subjectPrefix } = this.d.config;
    const { replies, coverage } = await gather(bus, workerSubject(subjectPrefix, req.op), encode(req), decodeReply, { timeoutMs, settleMs });
    if (replies.length === 0) return failure(ErrorCode.BrokerUnavailable, `no worker answered within ${timeoutMs} ms`);
    if (!coverage.complete) this.d.log.warn({ op: req.op, ...coverage }, "control request: not every worker answered in time");
    return { status: 200, body: mergeParts(req, replies, coverage) };
  }

  /** This worker's part, or an error reply (the door drops it: this worker then counts as not answering). */
  private async partOrError(op: ControlOp, b: Uint8Array): Promise<WorkerReply | { error: string }> {
    try {
      return await this.part(op, b);
    } catch (e) {
      this.d.log.error({ err: e, op }, "control: this worker's part failed");
      return { error: "internal" };
    }
  }

  /** This worker's part, for the door that scattered the request. */
  private async part(op: ControlOp, b: Uint8Array): Promise<WorkerReply | { error: string }> {
    const req = parseControlRequest(op, decode(b), this.d.config.maxChannels);
    if ("error" in req || req.op === "broadcast" || req.op === "events/replay") return { error: "error" in req ? req.error : "not a worker operation" };
    return { ...this.d.self, part: await this.d.local.run(req) };
  }

  /** The events webhook sent again from an id or a time: its durable consumer re-pointed (events-stream.ts). */
  private async replay(req: ReplayRequest): Promise<ControlAnswer> {
    const { eventsStream } = this.d;
    if (!this.d.broker.replayEvents || eventsStream === undefined)
      return failure(ErrorCode.NotFound, "no events webhook here: events/replay needs EVENTS_WEBHOOK_URL (and BROKER=jetstream)");
    const from = "fromId" in req ? { fromId: req.fromId } : { fromTime: req.fromTime };
    try {
      const r = await this.d.broker.replayEvents(eventsStream, from);
      if ("refused" in r) return failure(ErrorCode.BadRequest, r.refused);
      this.d.log.info({ ...from, pending: r.pending }, "events webhook replayed");
      return { status: 200, body: { ...from, pending: r.pending } };
    } catch (e) {
      if (e instanceof JetStreamApiError && e.code === JetStreamApiCodes.ConsumerNotFound)
        return failure(ErrorCode.NotFound, "the events webhook's consumer does not exist yet (no sender has started)");
      throw e;
    }
  }

  /**
   * One message to many channels: stored once per channel, published pipelined (the batch publish). Each
   * channel passes the chain as a publish of the caller (a namespace's `publish: false` refuses it unless
   * the caller is a key), and one refused gets its error in its own result.
   */
  private async broadcast(req: BroadcastRequest, as: Identity): Promise<ControlAnswer> {
    const items = req.channels.map((channel) => ({ channel, data: req.data }));
    const results = await this.d.publisher.publishBatch("http", publishedBy(as), items, (it) =>
      this.d.access.authorize(as, { right: "pub", channel: it.channel }),
    );
    return { status: 200, body: { results: results.map((r, i) => ({ channel: req.channels[i], ...r })) } };
  }
}

function decodeReply(b: Uint8Array): WorkerReply | undefined {
  const v = decode(b) as Partial<WorkerReply> | undefined;
  if (!v || typeof v.instance !== "string" || typeof v.worker !== "number" || typeof v.workers !== "number" || typeof v.part !== "object") return undefined;
  return v as WorkerReply;
}
