import type { AccessControl } from "../auth/access.js";
import { authorizeRequest, readKnock } from "../auth/http-auth.js";
import { readBody, sendJson, sendRefusal, track } from "../http/respond.js";
import { ErrorCode } from "../protocol/codes.js";
import type { TemplatedApp } from "../uws.js";
import { bodyJson, CONTROL_PATH, controlRequestOf } from "./request.js";
import type { ControlService } from "./service.js";

/**
 * The control plane's HTTP door on the public port, for a gateway without an admin listener (with one, the
 * primary serves `/v1/server/…` there instead, cluster/admin.ts). Every request passes the authorization
 * chain with the `admin` right: an API key.
 */
export function registerControlRoutes(app: TemplatedApp, d: { service: ControlService; access: AccessControl; maxBodyBytes: number }): void {
  app.any(`${CONTROL_PATH}*`, (res, req) => {
    const st = track(res);
    const method = req.getMethod();
    const r = controlRequestOf(method, req.getUrl(), req.getQuery() ?? "");
    if ("status" in r)
      return sendJson(res, st, r.status, { error: r.status === 400 ? ErrorCode.BadRequest : "not_found", message: r.message, temporary: false });
    const knock = readKnock(d.access, req, res, "http");
    // The body is read now or never: uWS gives it to handlers registered before the first await.
    const body = r.input === "body" ? readBody(res, st, d.maxBodyBytes) : undefined;
    void (async () => {
      const a = await authorizeRequest(d.access, knock, { right: "admin" });
      if ("refused" in a) return sendRefusal(res, st, a.refused);
      let input: unknown = r.input;
      if (body) {
        const b = await body;
        if (b === undefined) return;
        if (b === "too_large")
          return sendJson(res, st, 413, { error: ErrorCode.PayloadTooLarge, message: `body is larger than ${d.maxBodyBytes} bytes`, temporary: false });
        input = bodyJson(b);
      }
      const answer = await d.service.call(r.op, input);
      sendJson(res, st, answer.status, answer.body);
    })().catch(() => sendJson(res, st, 500, { error: ErrorCode.Internal, message: "internal error", temporary: true }));
  });
}
