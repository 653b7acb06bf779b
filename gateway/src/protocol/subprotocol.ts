/** The WebSocket subprotocol of the wire protocol (PROTOCOL.md); selected when a client offers it. */
export const PROTOCOL_V1 = "fanout.v1";
/** Subprotocol carrying a token: `bearer.<jwt>` (JWTs are base64url and dots: valid protocol tokens). */
export const BEARER_PROTOCOL_PREFIX = "bearer.";
/** The same protocol in binary WebSocket frames, each one MessagePack map (PROTOCOL.md "Subprotocols"). */
export const PROTOCOL_V1_MSGPACK = "fanout.v1.msgpack";
/** Every subprotocol of the wire protocol, one per codec (protocol/codecs.ts). */
export const SUBPROTOCOLS: readonly string[] = [PROTOCOL_V1, PROTOCOL_V1_MSGPACK];
