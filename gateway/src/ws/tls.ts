import type { Config } from "../config/config.js";
import type { RecognizedString, TemplatedApp } from "../uws.js";
import { loadUws } from "../uws.js";

/** The TLS listener's app (uWS SSLApp with the configured PEM files), or undefined when TLS is off. */
export function createTlsApp(c: Config): TemplatedApp | undefined {
  if (!c.tlsCertFile || !c.tlsKeyFile) return undefined;
  return loadUws().SSLApp({ cert_file_name: c.tlsCertFile, key_file_name: c.tlsKeyFile });
}

/**
 * The apps' topics as one, for the fan-out hub: uWS topics belong to one app, so with a plain and a TLS
 * listener a message is published on both and the receivers of both are counted. Only the two methods the
 * hub uses are real; the cast keeps the hub's constructor unchanged.
 */
export function topicsOf(apps: TemplatedApp[]): TemplatedApp {
  if (apps.length === 1) return apps[0]!;
  const facade = {
    publish: (topic: RecognizedString, message: RecognizedString, isBinary?: boolean, compress?: boolean): boolean => {
      let any = false;
      for (const a of apps) any = a.publish(topic, message, isBinary, compress) || any;
      return any;
    },
    numSubscribers: (topic: RecognizedString): number => apps.reduce((n, a) => n + a.numSubscribers(topic), 0),
  };
  return facade as unknown as TemplatedApp;
}
