/** A value as a NATS header's text: JSON on one line, every character beyond ASCII escaped (a header holds bytes, not text). */
export const headerJson = (v: unknown): string => JSON.stringify(v).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);

/**
 * A reader of a stored header's text that remembers the last text it read: the Centrifuge door's formats encode
 * the same message one after the other (and one publisher's messages often follow each other), so a message's
 * header is parsed once per worker, not once per format.
 */
export function lastRead<T>(parse: (text: string) => T | undefined): (text: string | undefined) => T | undefined {
  let lastText: string | undefined;
  let last: T | undefined;
  return (text) => {
    if (text === undefined) return undefined;
    if (text !== lastText) {
      last = parse(text);
      lastText = text;
    }
    return last;
  };
}
