import { channels, disconnect, info, refresh, subscribe, unsubscribe } from "./admin.js";
import { ApiCode, badRequest, fail, replyOfThrown, type ApiError, type Reply } from "./codes.js";
import type { Caller, ServerApiDeps } from "./context.js";
import { broadcast, publish } from "./publish.js";
import { history, historyRemove, presence, presenceStats } from "./reads.js";
import { isMethod, isObject, type Method } from "./request.js";

type Handler = (d: ServerApiDeps, who: Caller, params: Record<string, unknown>) => Promise<Reply>;

/** Every method but batch, by name: thin translations onto the services the native doors use. */
const HANDLERS: { readonly [M in Exclude<Method, "batch">]: Handler } = {
  publish,
  broadcast,
  subscribe,
  unsubscribe,
  disconnect,
  refresh,
  presence,
  presence_stats: presenceStats,
  history,
  history_remove: historyRemove,
  channels,
  info,
};

/** A batch's replies: each `{"<method>": result}` or `{"error": …}`, in the commands' order. */
export type BatchReply = { replies: ({ error: ApiError } | Record<string, unknown>)[] };

/**
 * Centrifugo's server API in front of this gateway's services (docs/backends.md): one method call, or a
 * batch of them. The HTTP door (http.ts) has identified the caller by its API key; each method passes the
 * rest of the chain with the right it needs (publish: `publish` scope; history, presence: `read`; the
 * control plane's methods: `admin`).
 */
export class ServerApi {
  /** `d`: what its methods use; the Centrifuge client door reads history and presence with them too. */
  constructor(readonly d: ServerApiDeps) {}

  /** One method with its parameters (a JSON value); unknown methods answer 104, `batch` here too. */
  async call(method: string, params: unknown, who: Caller): Promise<Reply> {
    const known = isMethod(method) && method !== "batch";
    const reply = await this.answer(method, params, who);
    this.d.calls.labels(known ? method : "unknown", "error" in reply ? String(reply.error.code) : "ok").inc();
    return reply;
  }

  private async answer(method: string, params: unknown, who: Caller): Promise<Reply> {
    if (!isMethod(method) || method === "batch") return fail(ApiCode.MethodNotFound, `method not found: ${method.slice(0, 64)}`);
    if (!isObject(params)) return badRequest("params must be a JSON object");
    try {
      return await HANDLERS[method](this.d, who, params);
    } catch (e) {
      this.d.log.error({ err: e, method }, "server api method failed");
      return replyOfThrown(e);
    }
  }

  /**
   * `batch`: `{"commands":[{"<method>":{params}}…], "parallel"}`; at most PUBLISH_BATCH_MAX_ITEMS commands, one
   * after another unless `parallel` (then all at once: the publishes among them pipelined).
   */
  async batch(params: unknown, who: Caller): Promise<BatchReply | { error: ApiError }> {
    const r = await this.commands(params, who);
    this.d.calls.labels("batch", "error" in r ? String(r.error.code) : "ok").inc();
    return r;
  }

  private async commands(params: unknown, who: Caller): Promise<BatchReply | { error: ApiError }> {
    if (!isObject(params) || !Array.isArray(params.commands)) return badRequest("batch takes {commands: [{<method>: {params}}…], parallel}");
    const commands = params.commands;
    if (commands.length > this.d.maxItems) return badRequest(`a batch holds at most ${this.d.maxItems} commands (this one ${commands.length})`);
    if (params.parallel !== undefined && typeof params.parallel !== "boolean") return badRequest("parallel must be true or false");
    const one = async (c: unknown): Promise<{ error: ApiError } | Record<string, unknown>> => {
      const entries = isObject(c) ? Object.entries(c).filter(([, v]) => v !== null && v !== undefined) : [];
      const [entry] = entries;
      if (!entry || entries.length !== 1) return badRequest("a command names one method: {<method>: {params}}");
      const [method, p] = entry;
      const r = await this.call(method, p, who);
      return "error" in r ? r : { [method]: r.result };
    };
    if (params.parallel === true) return { replies: await Promise.all(commands.map(one)) };
    const replies: ({ error: ApiError } | Record<string, unknown>)[] = [];
    for (const c of commands) replies.push(await one(c));
    return { replies };
  }
}
