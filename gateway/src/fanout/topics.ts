import type { Codec } from "../protocol/codec.js";
import { CODECS } from "../protocol/codecs.js";

/**
 * Every uWS topic name of the gateway, built here and nowhere else. uWS writes the bytes published to a
 * topic to each of its sockets as they are, so a topic carries one encoding: each codec has its own topic,
 * and the sockets that read coalesced frames have their own beside it (PROTOCOL.md "Coalesced frames").
 *
 * - `p:<pattern>`: a live feed's messages (JSON), `p:<pattern>\0msgpack` for MessagePack sockets;
 * - `…\0c` after either: the same feed's coalesced frames;
 * - `pr:<channel>` (and its codecs'): a channel's presence join/leave frames.
 */

/** The topic of a pattern's live feed (its JSON sockets'; `codecTopic` gives each codec's). */
export const feedTopic = (pattern: string): string => `p:${pattern}`;

/** The topic of a channel's presence join/leave frames (its JSON sockets'; `codecTopic` gives each codec's). */
export const presenceTopic = (channel: string): string => `pr:${channel}`;

/** The topic of `topic` for sockets of `codec`. The first codec (JSON) keeps the topic as it is. */
export const codecTopic = (topic: string, codec: Codec): string => (codec.slot === 0 ? topic : `${topic}\u0000${codec.name}`);

/** The topic of the sockets of `topic` (a codec's) that read coalesced frames. */
export const coalescedTopic = (topic: string): string => `${topic}\u0000c`;

/** `topic`'s topic for each codec, at the codec's slot (built once per feed or channel, not per message). */
export const codecTopics = (topic: string): readonly string[] => CODECS.map((c) => codecTopic(topic, c));

/** The topic a socket of `codec` joins for `topic`: the coalesced one when the feed coalesces and it reads them. */
export const socketTopic = (topic: string, codec: Codec, coalesced: boolean): string => {
  const t = codecTopic(topic, codec);
  return coalesced ? coalescedTopic(t) : t;
};
