import type { AccessControl } from "../auth/access.js";
import { authorizeRequest, readKnock } from "../auth/http-auth.js";
import { brokerFailure } from "../errors.js";
import type { Logger } from "../log.js";
import type { PresenceHub } from "../presence/hub.js";
import { checkChannel } from "../protocol/channel.js";
import { ErrorCode } from "../protocol/codes.js";
import type { TemplatedApp } from "../uws.js";
import { send, sendError, sendRefusal, track } from "./respond.js";

export type PresenceRouteContext = { presence?: PresenceHub; access: AccessControl; log: Logger; brokerKind: string; isConnected: () => boolean };

/**
 * `GET /v1/channels/{channel}/presence`: the channel's members, as the `presence` op answers them
 * (`{"channel","members":[…],"truncated"}`). Passes the authorization chain as a read of the channel. Registered before the history route, which takes the rest of /v1/channels/.
 */
export function registerPresenceRoute(app: TemplatedApp, ctx: PresenceRouteContext): void {
  app.get("/v1/channels/:channel/presence", (res, req) => {
    const st = track(res);
    const raw = req.getParameter(0) ?? "";
    const knock = readKnock(ctx.access, req, res, "http");
    let channel: string;
    try {
      channel = decodeURIComponent(raw);
    } catch {
      return sendError(res, st, { code: ErrorCode.BadChannel, message: "channel is not valid percent-encoding" });
    }
    const c = checkChannel(channel);
    if (!c.ok) return sendError(res, st, { code: ErrorCode.BadChannel, message: c.reason });
    const hub = ctx.presence;
    void authorizeRequest(ctx.access, knock, { right: "sub", channel, uses: ["presence"] })
      .then(async (r) => {
        if ("refused" in r) return sendRefusal(res, st, r.refused);
        if (!hub) return sendError(res, st, { code: ErrorCode.UnsupportedByBroker, message: `the ${ctx.brokerKind} broker keeps no presence` });
        try {
          const r = await hub.members(channel);
          send(res, st, 200, `{"channel":${JSON.stringify(channel)},"members":${JSON.stringify(r.members)},"truncated":${r.truncated}}`);
        } catch (e) {
          const f = brokerFailure(e, ctx.isConnected(), "presence");
          sendError(res, st, f);
        }
      })
      .catch((e) => {
        ctx.log.error({ err: e }, "presence request failed");
        sendError(res, st, { code: ErrorCode.Internal, message: "internal error" });
      });
  });
}
