import type { ServerSection } from "../config/sections/index.js";
import type { TemplatedApp } from "../uws.js";
import type { TopicPublisher } from "../fanout/socket.js";
import { loadUws } from "../uws.js";

/** The TLS listener's app (uWS SSLApp with the configured PEM files), or undefined when TLS is off. */
export function createTlsApp(c: Pick<ServerSection, "tlsCertFile" | "tlsKeyFile">): TemplatedApp | undefined {
  if (!c.tlsCertFile || !c.tlsKeyFile) return undefined;
  return loadUws().SSLApp({ cert_file_name: c.tlsCertFile, key_file_name: c.tlsKeyFile });
}

/**
 * The apps' topics as one, for the fan-out hub: uWS topics belong to one app, so with a plain and a TLS
 * listener a message is published on both and the receivers of both are counted.
 */
export function topicsOf(apps: TemplatedApp[]): TopicPublisher {
  const [only] = apps;
  if (only !== undefined && apps.length === 1) return only;
  return {
    publish: (topic, message, isBinary, compress) => {
      let any = false;
      for (const a of apps) any = a.publish(topic, message, isBinary, compress) || any;
      return any;
    },
    numSubscribers: (topic) => apps.reduce((n, a) => n + a.numSubscribers(topic), 0),
  };
}
