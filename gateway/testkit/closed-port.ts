/**
 * An address nothing listens on, for the tests of a backend that is down. Port 1 (tcpmux) on loopback: below
 * 1024, so no ephemeral listener of another test file can take it, as it could take the port of a server this
 * file started and stopped (a CI run once met another file's HTTP server there: 404 instead of "unreachable").
 */
export const CLOSED_PORT = 1;

/** `http://127.0.0.1:1<path>`: connecting is refused at once (ECONNREFUSED). */
export function closedUrl(path = ""): string {
  return `http://127.0.0.1:${CLOSED_PORT}${path}`;
}
