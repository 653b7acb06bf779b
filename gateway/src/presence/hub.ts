import type { PresenceApi, PresenceMember } from "../broker/broker.js";
import type { PresenceSection } from "../config/sections/index.js";
import { GatewayError } from "../errors.js";
import type { TopicPublisher } from "../fanout/socket.js";
import type { Logger } from "../log.js";
import { ErrorCode } from "../protocol/codes.js";
import { frameBytes } from "../protocol/codec.js";
import { CODECS } from "../protocol/codecs.js";
import { codecTopics, presenceTopic } from "../fanout/topics.js";
import type { ServerFrame } from "../protocol/server-frames.js";
import { WarnEvery } from "../util/warn-every.js";
import type { PresenceMetrics } from "./metrics.js";
import { PresenceView, type PresenceChange } from "./view.js";

/** A join or leave frame (encoded once per change per worker and codec in use). */
export function presenceEvent(channel: string, c: PresenceChange): ServerFrame {
  const m = c.member;
  return { op: c.type, channel, client: m.client, user: m.user, ...(m.info !== undefined ? { info: m.info } : {}) };
}

/** What a member list answer says: members (capped), and whether there were more. */
export type MemberList = { members: PresenceMember[]; truncated: boolean };

type ChannelState = {
  readonly channel: string;
  /** Its topic for each codec, at the codec's slot. */
  readonly topics: readonly string[];
  readonly view: PresenceView;
  refs: number;
  ready: Promise<void>;
  watch?: { stop(): void };
  linger?: NodeJS.Timeout;
};

/** What a worker's presence is made of. */
export type PresenceHubOptions = {
  /** Where join/leave frames are published: the uWS topics of the worker's apps. */
  readonly app: TopicPublisher;
  /** The broker's presence bucket. */
  readonly api: PresenceApi;
  readonly config: Pick<PresenceSection, "ttlMs" | "maxMembers">;
  readonly metrics: PresenceMetrics;
  readonly log: Logger;
  /** How long a channel without local presence subscribers stays watched (FEED_LINGER). */
  readonly lingerMs: number;
};

/**
 * A worker's presence. Per channel with local presence subscribers: one watch of the bucket (a core NATS
 * subscription on its republished records) and one member view, shared by every local socket; each change
 * is serialized once and published to the channel's uWS topic. The worker's own entries are refreshed by
 * one timer (every third of the TTL, as one batch), never one per socket; a crashed worker's entries
 * expire and their TTL markers are leaves for everyone else.
 */
export class PresenceHub {
  private readonly channels = new Map<string, ChannelState>();
  /** This worker's entries: `channel \0 client` → member. */
  private readonly own = new Map<string, { channel: string; member: PresenceMember }>();
  /** Removals that failed (NATS down): retried at each refresh round and after a reconnect. */
  private readonly unremoved = new Map<string, { channel: string; client: string }>();
  private timer?: NodeJS.Timeout;
  private refreshing = false;
  private stopped = false;
  private readonly warnings: WarnEvery;

  private readonly app: TopicPublisher;
  private readonly api: PresenceApi;
  private readonly c: PresenceHubOptions["config"];
  private readonly metrics: PresenceMetrics;
  private readonly log: Logger;
  private readonly lingerMs: number;

  constructor(o: PresenceHubOptions) {
    this.app = o.app;
    this.api = o.api;
    this.c = o.config;
    this.metrics = o.metrics;
    this.log = o.log;
    this.lingerMs = o.lingerMs;
    this.warnings = new WarnEvery(o.log, 60_000, "codec");
  }

  /** Sizes of the worker's presence tables (metrics): watched channels, own entries, removals to retry. */
  get sizes(): { channels: number; own: number; unremoved: number } {
    return { channels: this.channels.size, own: this.own.size, unremoved: this.unremoved.size };
  }

  /**
   * Takes part in the channel's presence: `joinTopic` (a socket that wants the join/leave frames joins the
   * topic first, so it sees its own join and everything after) and/or `member` (checked against the bound,
   * `presence_full`, then written). Throws a GatewayError or a broker error; on success, `leave` undoes it.
   */
  async join(channel: string, member: PresenceMember | undefined, joinTopic: (() => void) | undefined): Promise<void> {
    const st = await this.acquire(channel);
    const key = member ? `${channel}\u0000${member.client}` : "";
    try {
      if (member && st.view.size >= this.c.maxMembers && !st.view.has(member.client))
        throw new GatewayError(ErrorCode.PresenceFull, `channel ${channel} has ${st.view.size} presence members, the most allowed (PRESENCE_MAX_MEMBERS)`);
      joinTopic?.();
      if (!member) return;
      this.unremoved.delete(key);
      this.own.set(key, { channel, member });
      this.metrics.ownMembers.set(this.own.size);
      await this.api.put(channel, member);
      this.arm();
    } catch (e) {
      if (member) this.own.delete(key);
      this.metrics.ownMembers.set(this.own.size);
      this.release(channel);
      throw e;
    }
  }

  /** Undoes a `join` (unsub, socket close): removes the member's entry, if any; the watchers announce the leave. */
  leave(channel: string, client: string | undefined): void {
    if (client !== undefined && this.own.delete(`${channel}\u0000${client}`)) {
      this.metrics.ownMembers.set(this.own.size);
      this.remove(channel, client);
    }
    this.release(channel);
  }

  private remove(channel: string, client: string): void {
    const key = `${channel}\u0000${client}`;
    this.api.remove(channel, client).then(
      () => this.unremoved.delete(key),
      (e) => {
        // A member that rejoined meanwhile has its entry back: nothing to retry.
        if (this.own.has(key)) return;
        this.log.debug({ err: e, channel }, "presence remove failed; retried with the next refresh");
        this.unremoved.set(key, { channel, client });
        this.arm();
      },
    );
  }

  /** The channel's members: from the local view when this worker watches the channel, else read from the bucket. */
  async members(channel: string): Promise<MemberList> {
    const st = this.channels.get(channel);
    let view: PresenceView;
    if (st && !st.view.syncing) view = st.view;
    else {
      view = new PresenceView();
      view.endSync(await this.api.snapshot(channel));
    }
    return { members: view.list(this.c.maxMembers), truncated: view.size > this.c.maxMembers };
  }

  /** After a broker reconnect: records may have been missed, and entries lost with a restarted server. */
  resync(): void {
    for (const st of this.channels.values()) void this.sync(st);
    void this.refresh();
  }

  private async acquire(channel: string): Promise<ChannelState> {
    let st = this.channels.get(channel);
    if (st) {
      if (st.linger) clearTimeout(st.linger);
      st.linger = undefined;
      st.refs++;
    } else {
      const created: ChannelState = { channel, topics: codecTopics(presenceTopic(channel)), view: new PresenceView(), refs: 1, ready: Promise.resolve() };
      created.ready = this.start(created);
      this.channels.set(channel, created);
      st = created;
    }
    try {
      await st.ready;
    } catch (e) {
      st.refs--;
      throw e;
    }
    return st;
  }

  private async start(st: ChannelState): Promise<void> {
    st.view.beginSync();
    try {
      st.watch = await this.api.watch(st.channel, (r) => {
        const change = st.view.apply(r);
        if (change) this.announce(st, change);
      });
      this.metrics.watches.inc();
      this.announceAll(st, st.view.endSync(await this.api.snapshot(st.channel)));
    } catch (e) {
      st.watch?.stop();
      if (st.watch) this.metrics.watches.dec();
      if (this.channels.get(st.channel) === st) this.channels.delete(st.channel);
      throw e;
    }
  }

  private async sync(st: ChannelState): Promise<void> {
    if (st.view.syncing) return;
    st.view.beginSync();
    try {
      this.announceAll(st, st.view.endSync(await this.api.snapshot(st.channel)));
    } catch (e) {
      this.log.warn({ err: e, channel: st.channel }, "presence resync failed");
      this.announceAll(st, st.view.abortSync());
    }
  }

  private announceAll(st: ChannelState, changes: PresenceChange[]): void {
    for (const c of changes) this.announce(st, c);
  }

  /**
   * Publishes a join or leave to the channel's topic of each codec in use. Each codec's encoding is tried on
   * its own: a member whose `info` one codec cannot encode (written to the bucket by something other than a
   * gateway door, which bounds its depth) costs that codec's watchers this frame, counted and logged once a
   * minute, and nothing else; this runs inside the presence watch's NATS callback.
   */
  private announce(st: ChannelState, c: PresenceChange): void {
    this.metrics.changes.labels(c.type).inc();
    let frame: ServerFrame | undefined;
    for (const codec of CODECS) {
      const topic = st.topics[codec.slot] as string;
      if (this.app.numSubscribers(topic) === 0) continue;
      frame ??= presenceEvent(st.channel, c);
      let bytes: Uint8Array;
      try {
        bytes = frameBytes(codec.encode(frame));
      } catch (e) {
        this.metrics.encodeFailures.labels(codec.name).inc();
        this.warnings.warn(codec.name, { err: e, channel: st.channel }, "a presence frame could not be encoded: its watchers of this codec miss it");
        continue;
      }
      this.app.publish(topic, bytes, codec.binary, false);
    }
  }

  private release(channel: string): void {
    const st = this.channels.get(channel);
    if (!st || st.refs === 0) return;
    st.refs--;
    if (st.refs > 0) return;
    st.linger = setTimeout(() => {
      st.linger = undefined;
      if (st.refs > 0 || this.channels.get(channel) !== st) return;
      this.channels.delete(channel);
      st.watch?.stop();
      this.metrics.watches.dec();
    }, this.lingerMs);
    st.linger.unref();
  }

  private arm(): void {
    if (this.timer || this.stopped) return;
    this.timer = setInterval(() => void this.refresh(), Math.max(250, Math.floor(this.c.ttlMs / 3)));
    this.timer.unref();
  }

  /**
   * Rewrites every own entry (a new TTL) as one batch of publishes, of which only the first waits for an
   * ack (the bucket is there): an entry whose publish was lost is rewritten by the next round, a third of
   * the TTL later, before it expires. One run at a time.
   */
  private async refresh(): Promise<void> {
    if (this.refreshing) return;
    for (const [key, r] of this.unremoved) {
      this.unremoved.delete(key);
      if (!this.own.has(key)) this.remove(r.channel, r.client);
    }
    if (this.own.size === 0 && this.unremoved.size === 0) {
      if (this.timer) clearInterval(this.timer);
      this.timer = undefined;
      return;
    }
    if (this.own.size === 0) return;
    this.refreshing = true;
    const started = performance.now();
    const entries = [...this.own.values()];
    try {
      await this.api.refresh(entries);
      this.metrics.refreshSeconds.observe((performance.now() - started) / 1_000);
    } catch (e) {
      this.log.warn({ err: e, entries: entries.length }, "presence refresh failed; the entries expire unless a later refresh succeeds");
    } finally {
      this.refreshing = false;
    }
  }

  /** Stops watches and refreshes (worker drain; the closing sockets remove their entries first). */
  stopAll(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    for (const st of this.channels.values()) {
      if (st.linger) clearTimeout(st.linger);
      st.watch?.stop();
    }
    this.channels.clear();
  }
}
