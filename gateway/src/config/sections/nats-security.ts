import { type SettingTable, type SliceOf, type ValuesOf, section, trimmed } from "../section-kit.js";
import { parseBool } from "../parse.js";

const settings = {
  natsCredsFile: {
    env: "NATS_CREDS_FILE",
    shown: "(unset)",
    doc: "NATS credentials file (.creds: user JWT and nkey seed, NATS accounts); used by every connection to NATS_URL",
    default: () => "",
    parse: trimmed,
  },
  natsNkeySeedFile: {
    env: "NATS_NKEY_SEED_FILE",
    shown: "(unset)",
    doc: "File holding a NATS user nkey seed (SU...): the gateway signs the server's nonce with it",
    default: () => "",
    parse: trimmed,
  },
  natsUser: {
    env: "NATS_USER",
    shown: "(unset)",
    doc: "NATS user name (with NATS_PASSWORD_FILE)",
    default: () => "",
    parse: trimmed,
  },
  natsPasswordFile: {
    env: "NATS_PASSWORD_FILE",
    shown: "(unset)",
    doc: "File holding the NATS user's password (with NATS_USER; one trailing newline is ignored)",
    default: () => "",
    parse: trimmed,
  },
  natsTokenFile: {
    env: "NATS_TOKEN_FILE",
    shown: "(unset)",
    doc: "File holding a NATS authorization token",
    default: () => "",
    parse: trimmed,
  },
  natsTlsCaFile: {
    env: "NATS_TLS_CA_FILE",
    shown: "(unset)",
    doc: "PEM CA certificate(s) the NATS servers' certificates are checked against (default: the system's); turns TLS to NATS on",
    default: () => "",
    parse: trimmed,
  },
  natsTlsCertFile: {
    env: "NATS_TLS_CERT_FILE",
    shown: "(unset)",
    doc: "PEM client certificate for NATS (mutual TLS; with NATS_TLS_KEY_FILE)",
    default: () => "",
    parse: trimmed,
  },
  natsTlsKeyFile: {
    env: "NATS_TLS_KEY_FILE",
    shown: "(unset)",
    doc: "PEM private key of NATS_TLS_CERT_FILE",
    default: () => "",
    parse: trimmed,
  },
  natsTlsFirst: {
    env: "NATS_TLS_FIRST",
    shown: "false",
    doc: "Start TLS before the server's INFO (servers with handshake_first); turns TLS to NATS on",
    default: () => false,
    parse: parseBool,
    boolean: true,
  },
} satisfies SettingTable;

export type NatsSecurityValues = ValuesOf<typeof settings>;

export const natsSecurity = section({
  name: "natsSecurity",
  title: "How the gateway authenticates to NATS and whether it speaks TLS to it (file paths, read by broker/jetstream/nats-security.ts)",
  settings,
  slice: {
    credsFile: "natsCredsFile",
    nkeySeedFile: "natsNkeySeedFile",
    user: "natsUser",
    passwordFile: "natsPasswordFile",
    tokenFile: "natsTokenFile",
    tlsCaFile: "natsTlsCaFile",
    tlsCertFile: "natsTlsCertFile",
    tlsKeyFile: "natsTlsKeyFile",
    tlsFirst: "natsTlsFirst",
  },
});

export type NatsSecuritySection = SliceOf<typeof settings, typeof natsSecurity.slice>;
