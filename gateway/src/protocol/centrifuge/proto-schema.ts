/**
 * The messages of the Centrifuge client protocol (v2) in its Protobuf format, as data: each message's fields
 * by number, with the protocol's names (so a decoded command reads as its JSON twin does) and wire types.
 * Written from the protocol's public schema (package centrifugal.centrifuge.protocol); the field numbers are
 * the protocol's. proto-wire.ts encodes and decodes any message of this table.
 *
 * `json`: a `bytes` field whose bytes are JSON (data, info): decoded to the JSON value (the bytes as they are
 * when they are not JSON), encoded from a value as its JSON bytes.
 */
export type Scalar = "uint32" | "uint64" | "int32" | "int64" | "sint64" | "bool" | "string" | "bytes" | "json";
export type FieldType = Scalar | { msg: string } | { map: { msg: string } | "string" };
export type Field = { readonly name: string; readonly no: number; readonly type: FieldType; readonly repeated?: true };
export type Message = { readonly fields: readonly Field[]; readonly byNo: ReadonlyMap<number, Field>; readonly byName: ReadonlyMap<string, Field> };

type Row = [name: string, no: number, type: FieldType, repeated?: "repeated"];

const m = (msg: string) => ({ msg });

/** Every message, by name: [field name, number, type, repeated]. */
const ROWS: Readonly<Record<string, readonly Row[]>> = {
  Error: [
    ["code", 1, "uint32"],
    ["message", 2, "string"],
    ["temporary", 3, "bool"],
  ],
  Command: [
    ["id", 1, "uint32"],
    ["connect", 4, m("ConnectRequest")],
    ["subscribe", 5, m("SubscribeRequest")],
    ["unsubscribe", 6, m("UnsubscribeRequest")],
    ["publish", 7, m("PublishRequest")],
    ["presence", 8, m("PresenceRequest")],
    ["presence_stats", 9, m("PresenceStatsRequest")],
    ["history", 10, m("HistoryRequest")],
    ["ping", 11, m("Empty")],
    ["send", 12, m("SendRequest")],
    ["rpc", 13, m("RPCRequest")],
    ["refresh", 14, m("RefreshRequest")],
    ["sub_refresh", 15, m("SubRefreshRequest")],
  ],
  Reply: [
    ["id", 1, "uint32"],
    ["error", 2, m("Error")],
    ["push", 4, m("Push")],
    ["connect", 5, m("ConnectResult")],
    ["subscribe", 6, m("SubscribeResult")],
    ["unsubscribe", 7, m("Empty")],
    ["publish", 8, m("Empty")],
    ["presence", 9, m("PresenceResult")],
    ["presence_stats", 10, m("PresenceStatsResult")],
    ["history", 11, m("HistoryResult")],
    ["ping", 12, m("Empty")],
    ["rpc", 13, m("RPCResult")],
    ["refresh", 14, m("RefreshResult")],
    ["sub_refresh", 15, m("SubRefreshResult")],
  ],
  Push: [
    ["id", 1, "int64"],
    ["channel", 2, "string"],
    ["pub", 4, m("Publication")],
    ["join", 5, m("Join")],
    ["leave", 6, m("Join")],
    ["unsubscribe", 7, m("Unsubscribe")],
    ["message", 8, m("Message")],
    ["subscribe", 9, m("Subscribe")],
    ["connect", 10, m("Connect")],
    ["disconnect", 11, m("Disconnect")],
    ["refresh", 12, m("Refresh")],
  ],
  ClientInfo: [
    ["user", 1, "string"],
    ["client", 2, "string"],
    ["conn_info", 3, "json"],
    ["chan_info", 4, "json"],
  ],
  Publication: [
    ["data", 4, "json"],
    ["info", 5, m("ClientInfo")],
    ["offset", 6, "uint64"],
    ["tags", 7, { map: "string" }],
    ["delta", 8, "bool"],
    ["time", 9, "int64"],
    ["channel", 10, "string"],
    ["key", 11, "string"],
    ["removed", 12, "bool"],
    ["score", 13, "sint64"],
    ["epoch", 14, "string"],
    ["prev_data", 15, "bytes"],
    ["version", 16, "uint64"],
  ],
  /** Join and Leave: the same one field. */
  Join: [["info", 1, m("ClientInfo")]],
  Unsubscribe: [
    ["code", 2, "uint32"],
    ["reason", 3, "string"],
  ],
  Subscribe: [
    ["recoverable", 1, "bool"],
    ["epoch", 4, "string"],
    ["offset", 5, "uint64"],
    ["positioned", 6, "bool"],
    ["data", 7, "json"],
  ],
  Message: [["data", 1, "json"]],
  Connect: [
    ["client", 1, "string"],
    ["version", 2, "string"],
    ["data", 3, "json"],
    ["subs", 4, { map: m("SubscribeResult") }],
    ["expires", 5, "bool"],
    ["ttl", 6, "uint32"],
    ["ping", 7, "uint32"],
    ["pong", 8, "bool"],
    ["session", 9, "string"],
    ["node", 10, "string"],
    ["time", 11, "int64"],
  ],
  Disconnect: [
    ["code", 1, "uint32"],
    ["reason", 2, "string"],
    ["reconnect", 3, "bool"],
  ],
  Refresh: [
    ["expires", 1, "bool"],
    ["ttl", 2, "uint32"],
  ],
  ConnectRequest: [
    ["token", 1, "string"],
    ["data", 2, "json"],
    ["subs", 3, { map: m("SubscribeRequest") }],
    ["name", 4, "string"],
    ["version", 5, "string"],
    ["headers", 6, { map: "string" }],
    ["flag", 7, "int64"],
  ],
  ConnectResult: [
    ["client", 1, "string"],
    ["version", 2, "string"],
    ["expires", 3, "bool"],
    ["ttl", 4, "uint32"],
    ["data", 5, "json"],
    ["subs", 6, { map: m("SubscribeResult") }],
    ["ping", 7, "uint32"],
    ["pong", 8, "bool"],
    ["session", 9, "string"],
    ["node", 10, "string"],
    ["time", 11, "int64"],
  ],
  RefreshRequest: [["token", 1, "string"]],
  RefreshResult: [
    ["client", 1, "string"],
    ["version", 2, "string"],
    ["expires", 3, "bool"],
    ["ttl", 4, "uint32"],
  ],
  SubscribeRequest: [
    ["channel", 1, "string"],
    ["token", 2, "string"],
    ["recover", 3, "bool"],
    ["epoch", 6, "string"],
    ["offset", 7, "uint64"],
    ["data", 8, "json"],
    ["positioned", 9, "bool"],
    ["recoverable", 10, "bool"],
    ["join_leave", 11, "bool"],
    ["delta", 12, "string"],
    ["tf", 13, m("FilterNode")],
    ["flag", 14, "int64"],
    ["type", 15, "int32"],
    ["phase", 16, "int32"],
    ["cursor", 17, "string"],
    ["limit", 18, "int32"],
    ["asc", 19, "bool"],
  ],
  SubscribeResult: [
    ["expires", 1, "bool"],
    ["ttl", 2, "uint32"],
    ["recoverable", 3, "bool"],
    ["epoch", 6, "string"],
    ["publications", 7, m("Publication"), "repeated"],
    ["recovered", 8, "bool"],
    ["offset", 9, "uint64"],
    ["positioned", 10, "bool"],
    ["data", 11, "json"],
    ["was_recovering", 12, "bool"],
    ["delta", 13, "bool"],
    ["id", 14, "int64"],
    ["type", 15, "int32"],
    ["phase", 16, "int32"],
    ["cursor", 17, "string"],
    ["state", 18, m("Publication"), "repeated"],
    ["publish_debounce", 19, "uint32"],
  ],
  KeyedItem: [
    ["key", 1, "string"],
    ["version", 2, "uint64"],
  ],
  TrackBatch: [
    ["signature", 1, "string"],
    ["items", 2, m("KeyedItem"), "repeated"],
  ],
  SubRefreshRequest: [
    ["channel", 1, "string"],
    ["token", 2, "string"],
    ["type", 3, "int32"],
    ["track", 4, m("TrackBatch"), "repeated"],
    ["untrack", 5, "string", "repeated"],
  ],
  SubRefreshResult: [
    ["expires", 1, "bool"],
    ["ttl", 2, "uint32"],
    ["items", 3, m("Publication"), "repeated"],
  ],
  /** UnsubscribeResult, PublishResult, PingRequest, PingResult: no fields. */
  Empty: [],
  UnsubscribeRequest: [["channel", 1, "string"]],
  PublishRequest: [
    ["channel", 1, "string"],
    ["data", 2, "json"],
    ["type", 3, "int32"],
    ["key", 4, "string"],
    ["removed", 5, "bool"],
  ],
  PresenceRequest: [["channel", 1, "string"]],
  PresenceResult: [["presence", 1, { map: m("ClientInfo") }]],
  PresenceStatsRequest: [["channel", 1, "string"]],
  PresenceStatsResult: [
    ["num_clients", 1, "uint32"],
    ["num_users", 2, "uint32"],
  ],
  StreamPosition: [
    ["offset", 1, "uint64"],
    ["epoch", 2, "string"],
  ],
  HistoryRequest: [
    ["channel", 1, "string"],
    ["limit", 7, "int32"],
    ["since", 8, m("StreamPosition")],
    ["reverse", 9, "bool"],
  ],
  HistoryResult: [
    ["publications", 1, m("Publication"), "repeated"],
    ["epoch", 2, "string"],
    ["offset", 3, "uint64"],
  ],
  RPCRequest: [
    ["data", 1, "json"],
    ["method", 2, "string"],
  ],
  RPCResult: [["data", 1, "json"]],
  SendRequest: [["data", 1, "json"]],
  FilterNode: [
    ["op", 1, "string"],
    ["key", 2, "string"],
    ["cmp", 3, "string"],
    ["val", 4, "string"],
    ["vals", 5, "string", "repeated"],
    ["nodes", 6, m("FilterNode"), "repeated"],
  ],
};

export const SCHEMA: ReadonlyMap<string, Message> = new Map(
  Object.entries(ROWS).map(([name, rows]) => {
    const fields = rows.map(([n, no, type, rep]): Field => ({ name: n, no, type, ...(rep ? { repeated: true as const } : {}) }));
    return [name, { fields, byNo: new Map(fields.map((f) => [f.no, f])), byName: new Map(fields.map((f) => [f.name, f])) }];
  }),
);

/** A message of the schema by name (a name not in it is a programming error). */
export function message(name: string): Message {
  const msg = SCHEMA.get(name);
  if (!msg) throw new Error(`no message ${name} in the Centrifuge schema`);
  return msg;
}
