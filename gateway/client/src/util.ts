/** A promise with its resolve and reject at hand. */
export function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: Error) => void } {
  let resolve!: (v: T) => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

export const isThenable = (v: unknown): v is Promise<void> => typeof (v as { then?: unknown } | undefined)?.then === "function";
