import type { AccessControl } from "../auth/access.js";
import { authorizeRequest, fromThisHost, readKnock } from "../auth/http-auth.js";
import { readBody, sendError, sendJson, sendRefusal, track } from "../http/respond.js";
import { ErrorCode } from "../protocol/codes.js";
import type { TemplatedApp } from "../uws.js";
import { bodyJson, CONTROL_PATH, controlGate } from "./request.js";
import type { ControlService } from "./service.js";

/**
 * The control plane's HTTP door on the public port, for a gateway without an admin listener (with one, the
 * primary serves `/v1/server/…` there instead, instance/admin.ts). Every request passes the control gate (no
 * browser pages, JSON bodies) and the authorization chain with the `admin` right: an API key with the admin
 * scope, or with authentication off a request from this host.
 */
export function registerControlRoutes(app: TemplatedApp, d: { service: ControlService; access: AccessControl; maxBodyBytes: number }): void {
  app.any(`${CONTROL_PATH}*`, (res, req) => {
    const st = track(res);
    const header = (h: string) => req.getHeader(h);
    const r = controlGate(req.getMethod(), req.getUrl(), req.getQuery() ?? "", { origin: header("origin"), contentType: header("content-type") });
    if ("code" in r) return sendError(res, st, r);
    const ip = Buffer.from(res.getRemoteAddressAsText()).toString();
    const local = fromThisHost(ip, header);
    const knock = readKnock(d.access, req, res, "http", ip);
    // The body is read now or never: uWS gives it to handlers registered before the first await.
    const body = r.input === "body" ? readBody(res, st, d.maxBodyBytes) : undefined;
    void (async () => {
      const a = await authorizeRequest(d.access, knock, { right: "admin", local });
      if ("refused" in a) return sendRefusal(res, st, a.refused);
      let input: unknown = r.input;
      if (body) {
        const b = await body;
        if (b === undefined) return;
        if (b === "too_large") return sendError(res, st, { code: ErrorCode.PayloadTooLarge, message: `body is larger than ${d.maxBodyBytes} bytes` });
        input = bodyJson(b);
      }
      const answer = await d.service.call(r.op, input, a.identity);
      sendJson(res, st, answer.status, answer.body);
    })().catch(() => sendError(res, st, { code: ErrorCode.Internal, message: "internal error" }));
  });
}
