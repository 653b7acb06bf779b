/** Stable error codes for errors raised inside the gateway (not the wire codes; see protocol/codes.ts). */
export type GatewayErrorCode =
  | "ERR_CONFIG"
  | "ERR_UWS_FALLBACK"
  | "ERR_STREAM_MISMATCH"
  | "ERR_BROKER_UNAVAILABLE"
  | "ERR_BROKER"
  | "ERR_BROKER_TIMEOUT"
  | "ERR_EMBEDDED_NATS"
  | "ERR_EMBEDDED_REDIS";

export class GatewayError extends Error {
  readonly code: GatewayErrorCode;
  constructor(code: GatewayErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "GatewayError";
    this.code = code;
  }
}

/** A bad setting: the message names the setting (env var and flag). */
export class ConfigError extends GatewayError {
  readonly setting: string;
  constructor(setting: string, message: string) {
    super("ERR_CONFIG", message);
    this.name = "ConfigError";
    this.setting = setting;
  }
}
