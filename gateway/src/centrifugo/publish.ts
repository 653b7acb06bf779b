import { publishedBy } from "../auth/access.js";
import { OCTET_STREAM } from "../protocol/content-type.js";
import { apiErrorOf, badRequest, replyOfThrown, type Reply } from "./codes.js";
import { msgIdOf, refusedAccess, spentAllowance, type Caller, type ServerApiDeps } from "./context.js";
import { broadcastParams, publishParams, type Payload } from "./request.js";

/** The value the publish service stores: JSON data, or bytes with the binary content type. */
const stored = (p: Payload): { data: unknown; type?: string } => (p.bytes ? { data: p.bytes, type: OCTET_STREAM } : { data: p.data });

/**
 * `publish`: the native HTTP publish of one message. The chain (a key's `publish` scope, the namespace's
 * switches), the publish allowance, the publish hook and the size limit are the publish service's and the
 * chain's; `tags` are stored with the message (protocol/tags.ts); the answer is `{offset, epoch}`: the message's seq in its stream and the stream's epoch.
 */
export async function publish(d: ServerApiDeps, who: Caller, o: Record<string, unknown>): Promise<Reply> {
  const p = publishParams(o);
  if ("error" in p) return badRequest(p.error);
  const refused = (await refusedAccess(d.access, who, { right: "pub", channel: p.channel })) ?? spentAllowance(d, who, 1);
  if (refused) return refused;
  const { data, type } = stored(p);
  try {
    const msgId = msgIdOf(p.idempotencyKey, p.channel);
    const r = await d.publisher.publish("http", publishedBy(who.identity), p.channel, data, msgId, undefined, undefined, type, p.tags);
    return { result: { offset: r.seq, epoch: d.broker.epochOf(p.channel) ?? "" } };
  } catch (e) {
    return replyOfThrown(e);
  }
}

/**
 * `broadcast`: one message to many channels, as the native batch publishes them (pipelined, each channel
 * through the chain on its own); one response per channel, in order.
 */
export async function broadcast(d: ServerApiDeps, who: Caller, o: Record<string, unknown>): Promise<Reply> {
  const p = broadcastParams(o, d.maxItems);
  if ("error" in p) return badRequest(p.error);
  const spent = spentAllowance(d, who, p.channels.length);
  if (spent) return spent;
  const { data, type } = stored(p);
  const items = p.channels.map(({ channel }) => {
    const msgId = msgIdOf(p.idempotencyKey, channel);
    return { channel, data, ...(msgId ? { msgId } : {}), ...(type ? { type } : {}), ...(p.tags ? { tags: p.tags } : {}) };
  });
  try {
    const results = await d.publisher.publishBatch("http", publishedBy(who.identity), items, (it) =>
      d.access.authorize(who.identity, { right: "pub", channel: it.channel }),
    );
    const responses = results.map((r, i) =>
      "seq" in r
        ? { result: { offset: r.seq, epoch: d.broker.epochOf(items[i]?.channel ?? "") ?? "" } }
        : { error: apiErrorOf({ code: r.error, message: r.message }) },
    );
    return { result: { responses } };
  } catch (e) {
    return replyOfThrown(e);
  }
}
