import type { PresenceMember, PresenceRecord } from "../broker/broker.js";

/** A membership change of a channel, as join/leave frames tell it. */
export type PresenceChange = { type: "join" | "leave"; member: PresenceMember };

type Known = { member: PresenceMember; seq: number };

/**
 * A worker's view of one channel's members, kept from the bucket's live records (puts, deletes, purges and
 * the server's TTL markers, in stream order) and snapshots read from the bucket. Pure: no I/O.
 *
 * A put of a member already known is a refresh, not a join; a removal of an unknown member is nothing.
 * While a snapshot is read (`beginSync` … `endSync`), live records are held; at the end the snapshot and
 * every held record newer than what the snapshot says of its key make the new member set, and the
 * differences with the old one are the changes to announce (none when nothing was missed).
 */
export class PresenceView {
  private members = new Map<string, Known>();
  private held?: PresenceRecord[];

  get size(): number {
    return this.members.size;
  }

  get syncing(): boolean {
    return this.held !== undefined;
  }

  has(client: string): boolean {
    return this.members.has(client);
  }

  /** Up to `limit` members, oldest join first. */
  list(limit: number): PresenceMember[] {
    const out: PresenceMember[] = [];
    for (const k of this.members.values()) out.push(k.member);
    out.sort((a, b) => a.joinedAt - b.joinedAt || (a.client < b.client ? -1 : 1));
    return out.length > limit ? out.slice(0, limit) : out;
  }

  /** A live record; the change it makes (undefined while syncing, or when it changes nothing). */
  apply(r: PresenceRecord): PresenceChange | undefined {
    if (this.held) {
      this.held.push(r);
      return undefined;
    }
    const cur = this.members.get(r.client);
    if (r.member) {
      if (cur) {
        cur.member = r.member;
        cur.seq = r.seq;
        return undefined;
      }
      this.members.set(r.client, { member: r.member, seq: r.seq });
      return { type: "join", member: r.member };
    }
    if (!cur) return undefined;
    this.members.delete(r.client);
    return { type: "leave", member: cur.member };
  }

  /** A snapshot read starts: live records are held until `endSync`. */
  beginSync(): void {
    this.held ??= [];
  }

  /** The snapshot (every key's last record, removals included, in any order); returns the changes. */
  endSync(snapshot: readonly PresenceRecord[]): PresenceChange[] {
    const held = this.held ?? [];
    this.held = undefined;
    const next = new Map<string, Known>();
    const removedAt = new Map<string, number>();
    const take = (r: PresenceRecord): void => {
      const known = Math.max(next.get(r.client)?.seq ?? 0, removedAt.get(r.client) ?? 0);
      if (r.seq <= known) return;
      if (r.member) {
        next.set(r.client, { member: r.member, seq: r.seq });
        removedAt.delete(r.client);
      } else {
        next.delete(r.client);
        removedAt.set(r.client, r.seq);
      }
    };
    for (const r of snapshot) take(r);
    for (const r of held) take(r);
    const changes: PresenceChange[] = [];
    for (const [client, k] of this.members) if (!next.has(client)) changes.push({ type: "leave", member: k.member });
    for (const [client, k] of next) if (!this.members.has(client)) changes.push({ type: "join", member: k.member });
    this.members = next;
    return changes;
  }

  /** The snapshot could not be read: the held records are applied as they came. */
  abortSync(): PresenceChange[] {
    const held = this.held ?? [];
    this.held = undefined;
    const out: PresenceChange[] = [];
    for (const r of held) {
      const c = this.apply(r);
      if (c) out.push(c);
    }
    return out;
  }
}
