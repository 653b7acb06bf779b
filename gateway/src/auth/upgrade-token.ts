import { bearerOf } from "./authenticator.js";
import { BEARER_PROTOCOL_PREFIX, PROTOCOL_V1, SUBPROTOCOLS } from "../protocol/subprotocol.js";

export { BEARER_PROTOCOL_PREFIX, PROTOCOL_V1 };

/** What an upgrade request offers: its token (if any) and the subprotocol to answer with. */
export type UpgradeOffer = { token?: string; protocol: string } | { error: string };

/**
 * Reads the token from, in order: `Authorization: Bearer`, a `bearer.<jwt>` subprotocol, the `token`
 * query parameter. A `bearer.` subprotocol must come with another one (e.g. `fanout.v1`) for the server to
 * select (fanout.v1, or another codec's subprotocol), because the server must answer with one of the offered protocols and never with the token.
 * Names the gateway does not speak are never selected.
 */
export function readUpgradeOffer(h: { authorization: string; protocols: string; queryToken: string | undefined }): UpgradeOffer {
  const offered = h.protocols
    .split(",")
    .map((p) => p.trim())
    .filter((p) => p.length > 0);
  const bearerProtocol = offered.find((p) => p.startsWith(BEARER_PROTOCOL_PREFIX));
  const others = offered.filter((p) => !p.startsWith(BEARER_PROTOCOL_PREFIX));
  // The first of the wire protocol's subprotocols the client offers (its codec), else none: RFC 6455 lets a server
  // select only a subprotocol it speaks, so an offer of names we do not know is answered without one (JSON).
  const protocol = others.find((p) => SUBPROTOCOLS.includes(p)) ?? "";
  if (bearerProtocol !== undefined && protocol === "")
    return { error: `offer "${PROTOCOL_V1}" alongside "${BEARER_PROTOCOL_PREFIX}<token>" in Sec-WebSocket-Protocol` };
  const token =
    (h.authorization ? bearerOf(h.authorization) : undefined) ?? bearerProtocol?.slice(BEARER_PROTOCOL_PREFIX.length) ?? (h.queryToken || undefined);
  return token !== undefined ? { token, protocol } : { protocol };
}
