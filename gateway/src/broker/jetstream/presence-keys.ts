/**
 * Presence keys. A member of channel `orders.eu` with client id `k3Jx…` is the KV key `orders.eu.k3Jx…` of the
 * presence bucket (subject `$KV.<bucket>.orders.eu.k3Jx…`). Each channel token is written as a KV key token
 * (util/key-tokens.ts), so a channel's tokens stay tokens and a channel's members are exactly the keys
 * `<encoded channel>.*`: every key has one token more than its channel.
 */
import { encodeToken } from "../../util/key-tokens.js";

/** The channel part of its members' keys. */
export const encodeChannel = (channel: string): string => channel.split(".").map(encodeToken).join(".");

/** The key of one member. */
export const memberKey = (channel: string, client: string): string => `${encodeChannel(channel)}.${client}`;

/** The client id of a key (its last token). */
export const clientOfKey = (key: string): string => key.slice(key.lastIndexOf(".") + 1);
