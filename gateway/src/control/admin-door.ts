import type { IncomingMessage, ServerResponse } from "node:http";
import { AccessControl } from "../auth/access.js";
import { Authenticator } from "../auth/authenticator.js";
import { hooksOf } from "../auth/hooks.js";
import type { Sections } from "../config/sections/index.js";
import { authorizeRequest, fromThisHost, readNodeKnock } from "../auth/http-auth.js";
import type { Bus } from "../broker/broker.js";
import { WIRE_ERRORS } from "../errors.js";
import type { Logger } from "../log.js";
import { ErrorCode } from "../protocol/codes.js";
import { writeNodeError, type ErrorReply } from "../protocol/http-reply.js";
import { bodyJson, CONTROL_PATH, controlGate } from "./request.js";
import { serverSubject } from "./service.js";

export type AdminControlDeps = {
  access: AccessControl;
  /** The primary's own NATS connection (JetStream); undefined on Redis: every operation answers 501. */
  bus?: Bus;
  subjectPrefix: string;
  timeoutMs: number;
  maxBodyBytes: number;
  log: Logger;
};

/**
 * The control plane's HTTP door on the admin listener (node:http, in the primary). The primary holds no
 * connections: after the authorization chain it hands the request to one worker of any instance over NATS
 * (`<prefix>.server.<op>`, the queue group backends use too), which gathers every worker's part. Returns
 * false for a path that is not the control plane's.
 */
export function adminControl(d: AdminControlDeps): (req: IncomingMessage, res: ServerResponse) => boolean {
  return (req, res) => {
    const [path = "/", query = ""] = (req.url ?? "/").split("?", 2);
    if (!path.startsWith(CONTROL_PATH)) return false;
    const fail = (e: ErrorReply) => writeNodeError(res, e);
    const header = (h: string): string => {
      const v = req.headers[h];
      return Array.isArray(v) ? (v[0] ?? "") : (v ?? "");
    };
    const r = controlGate(req.method ?? "GET", path, query, { origin: header("origin"), contentType: header("content-type") });
    if ("code" in r) {
      fail(r);
      return true;
    }
    const ip = req.socket.remoteAddress ?? "";
    const knock = readNodeKnock(d.access, req.headers, ip);
    void (async () => {
      const body = r.input === "body" ? await readNodeBody(req, d.maxBodyBytes) : undefined;
      const a = await authorizeRequest(d.access, knock, { right: "admin", local: fromThisHost(ip, header) });
      if ("refused" in a) return fail(a.refused);
      if (body === "too_large") return fail({ code: ErrorCode.PayloadTooLarge, message: `body is larger than ${d.maxBodyBytes} bytes` });
      if (!d.bus)
        return fail({ code: ErrorCode.UnsupportedByBroker, message: "the redis broker carries no control requests: the control plane needs JetStream (NATS)" });
      const input = body === undefined ? r.input : bodyJson(body);
      // A caller that is no key (authentication off) is told to the worker: its broadcast passes the chain as a client's.
      const sent = a.identity.trusted || typeof input !== "object" || input === null ? input : { ...input, asAnonymous: true };
      let answer: Uint8Array;
      try {
        // The worker waits at most timeoutMs for the others; the margin is its own turn and the hop back.
        answer = await d.bus.request(serverSubject(d.subjectPrefix, r.op), Buffer.from(JSON.stringify(sent)), d.timeoutMs + 2_000);
      } catch (e) {
        d.log.warn({ err: e, op: r.op }, "control request: no worker answered");
        return fail({ code: ErrorCode.BrokerUnavailable, message: "no worker answered the control request" });
      }
      const text = Buffer.from(answer.buffer, answer.byteOffset, answer.byteLength).toString("utf8");
      const code = (JSON.parse(text) as { error?: unknown }).error;
      // An error the wire does not know (`reply_too_large` from the bus: the answer passed NATS' max_payload) is the gateway's failure.
      const status = typeof code !== "string" ? 200 : code in WIRE_ERRORS ? WIRE_ERRORS[code as ErrorCode].status : 502;
      res.writeHead(status, { "content-type": "application/json" }).end(text);
    })().catch((e: unknown) => {
      d.log.error({ err: e }, "admin control request failed");
      if (!res.headersSent) fail({ code: ErrorCode.Internal, message: "internal error" });
    });
    return true;
  };
}

function readNodeBody(req: IncomingMessage, limit: number): Promise<Buffer | "too_large"> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > limit) over = true;
      else chunks.push(c);
    });
    req.on("end", () => resolve(over ? "too_large" : Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

/**
 * The control plane's door on the primary's admin listener, from the sections: the same authorization chain as
 * the workers' (keys, permissions, the connect and subscribe hooks) and the primary's bus (none without NATS).
 */
export function adminControlDoor(c: Sections, bus: Bus | undefined, log: Logger): (req: IncomingMessage, res: ServerResponse) => boolean {
  return adminControl({
    access: new AccessControl(new Authenticator(c.auth), hooksOf(c.hooks, log), log),
    ...(bus ? { bus } : {}),
    subjectPrefix: c.control.subjectPrefix,
    timeoutMs: c.control.timeoutMs,
    maxBodyBytes: c.server.publishBatchMaxBytes,
    log,
  });
}
