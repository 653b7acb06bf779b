/**
 * @fanout-gateway/client: the fanout-gateway client SDK, for browsers and Node (its README says which runtimes are tested), with no runtime
 * dependencies. Wire protocol: PROTOCOL.md of fanout-gateway (version 1, subprotocol `fanout.v1`).
 */
export { GatewayClient } from "./client.js";
export { DEFAULT_OPTIONS, type GatewayClientOptions } from "./options.js";
export { backoffDelay } from "./backoff.js";
export { GatewayError, WIRE_CODES, isTemporary, type ClientErrorCode, type WireErrorCode } from "./errors.js";
export { EVENT_TYPES, type GatewayEvent, type GatewayEventType } from "./events.js";
export { SUBPROTOCOL, SUBPROTOCOL_MSGPACK, type MsgpackFunctions } from "./wire.js";
export type {
  BatchItem,
  BatchItemResult,
  GatewayMessage,
  HistoryMessage,
  HistoryOptions,
  HistoryPage,
  MessageHandler,
  PresenceEvent,
  PresenceList,
  PresenceMember,
  PublishResult,
  StartPosition,
  SubscribeInfo,
  SubscribeOptions,
  Subscription,
  WebSocketConstructor,
  WebSocketLike,
} from "./types.js";
export {
  subscribeEvents,
  type EventsGap,
  type EventSourceConstructor,
  type EventSourceLike,
  type EventSubscription,
  type SubscribeEventsOptions,
} from "./sse.js";
