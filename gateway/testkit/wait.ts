// Polling waits (no sleeps): a condition is checked every `intervalMs` until it yields a value or time runs out.
export type WaitOptions = { timeoutMs?: number; intervalMs?: number; what?: string };

export async function waitFor<T>(check: () => T | undefined | false | Promise<T | undefined | false>, opts: WaitOptions = {}): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const intervalMs = opts.intervalMs ?? 20;
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined && v !== false) return v as T;
    } catch (e) {
      lastErr = e;
      if (e instanceof Error && /exited/.test(e.message)) throw e;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${opts.what ?? "condition"}${lastErr ? `: ${String(lastErr)}` : ""}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
