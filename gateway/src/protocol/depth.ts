/**
 * The deepest nesting of arrays and maps (JSON arrays and objects) a client frame may have, the frame's own
 * map counting as one level: a `pub`'s `data` or a presence `info` may nest 63 levels within it. The same for
 * every codec, and well under the 100 levels the MessagePack encoder takes, so that anything a client sends
 * can be encoded again inside a server frame (a join frame holds `info` one level down).
 */
export const MAX_FRAME_DEPTH = 64;

/** The deepest a published value may nest over HTTP: what a `pub` frame's `data` may (the frame's map aside). */
export const MAX_DATA_DEPTH = MAX_FRAME_DEPTH - 1;

/** What an HTTP publish whose value nests deeper than MAX_DATA_DEPTH is answered with (code `bad_request`). */
export const DATA_TOO_DEEP = `data nests arrays and objects more than ${MAX_DATA_DEPTH} levels deep`;

/** What a frame nested deeper than MAX_FRAME_DEPTH is answered with (code `bad_request`). */
export const TOO_DEEP = `frame nests arrays and objects more than ${MAX_FRAME_DEPTH} levels deep`;

/**
 * Whether JSON text nests arrays and objects more than `max` levels deep: brackets outside strings counted in
 * one pass, nothing built. Text that is not JSON gets an answer too; JSON.parse refuses it afterwards.
 */
export function jsonNestsDeeper(text: string, max: number = MAX_FRAME_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}
