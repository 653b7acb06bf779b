import { GatewayError } from "../../errors.js";
import { ErrorCode } from "../../protocol/codes.js";

/** Lists the names of every consumer of the stream (all users, every worker and instance). */
export type ConsumerNamesSource = () => Promise<string[]>;

export type DurableQuotaOptions = {
  /** Durable names one user may hold; -1 unlimited (DURABLE_MAX_PER_USER). */
  maxPerUser: number;
  /** How long a listing is reused to refuse at once (a user retrying new names over the bound costs nothing). */
  cacheMs?: number;
  now?: () => number;
};

const noop = () => undefined;

/**
 * The per-user bound on durable names. The stream's consumers are the shared truth (their names carry the
 * user, see `consumerPrefix`), so the count holds across workers and instances. An admission waits for a
 * listing that started after it arrived (concurrent admissions share one; a storm of them costs one listing
 * after another, not one each); a refusal may come from a listing up to `cacheMs` old. Admissions on several
 * workers at the same instant can each see the user one short of the bound and all pass; the stream's own
 * consumer limit stays the hard bound.
 */
export class DurableQuota {
  private last?: { at: number; names: Set<string> };
  private running?: Promise<Set<string>>;
  private queued?: Promise<Set<string>>;
  private readonly cacheMs: number;
  private readonly now: () => number;

  constructor(
    private readonly list: ConsumerNamesSource,
    private readonly opts: DurableQuotaOptions,
  ) {
    this.cacheMs = opts.cacheMs ?? 2_000;
    this.now = opts.now ?? Date.now;
  }

  /**
   * Resolves when `name` (a consumer name starting with `userPrefix`) may be created; rejects with
   * `too_many_durables` when the user already holds `maxPerUser` other names.
   */
  async admit(userPrefix: string, name: string): Promise<void> {
    const max = this.opts.maxPerUser;
    if (max < 0) return;
    const recent = this.last && this.now() - this.last.at < this.cacheMs ? this.last.names : undefined;
    if (recent && held(recent, userPrefix, name) >= max) throw tooMany(held(recent, userPrefix, name), max);
    const n = held(await this.fresh(), userPrefix, name);
    if (n >= max) throw tooMany(n, max);
  }

  /** A consumer this worker just created: counted at once in the cached listing. */
  created(name: string): void {
    this.last?.names.add(name);
  }

  /** A listing started after this call: the one under way is too old, so join (or queue) the next. */
  private fresh(): Promise<Set<string>> {
    if (!this.running) return (this.running = this.fetch());
    this.queued ??= this.running.then(noop, noop).then(() => {
      this.queued = undefined;
      return (this.running = this.fetch());
    });
    return this.queued;
  }

  private fetch(): Promise<Set<string>> {
    const p = this.list().then((all) => {
      const names = new Set(all);
      this.last = { at: this.now(), names };
      return names;
    });
    p.finally(() => {
      if (this.running === p) this.running = undefined;
    }).catch(noop);
    return p;
  }
}

function held(names: Set<string>, prefix: string, except: string): number {
  let n = 0;
  for (const c of names) if (c !== except && c.startsWith(prefix)) n++;
  return n;
}

const tooMany = (n: number, max: number) =>
  new GatewayError(ErrorCode.TooManyDurables, `you hold ${n} durable names, the most allowed (${max}): reuse one, or let an unused one expire`);
