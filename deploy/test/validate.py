"""Offline validators for deploy/test/deploy.test.ts; prints one JSON object on stdout.

  validate.py manifests K8S_VERSION FILE...   Kubernetes kinds: kubernetes-validate --strict; the two CRDs we
                                              ship (ServiceMonitor, NACK Stream): deploy/schema/crds/*.json;
                                              any other kind is an error (nothing passes unchecked).
  validate.py compose SCHEMA FILE             a compose file against the compose-spec JSON schema
  validate.py yaml FILE                       the YAML documents, parsed
"""
import json
import os
import sys

import jsonschema
import kubernetes_validate
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
CRDS = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"): "servicemonitor.json",
    ("jetstream.nats.io/v1beta2", "Stream"): "nack-stream.json",
}


def load_docs(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def schema_errors(schema, doc):
    validator = jsonschema.Draft202012Validator(schema)
    return ["%s: %s" % ("/".join(str(p) for p in e.absolute_path) or "(root)", e.message)
            for e in sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))]


def check_manifest(doc, version):
    key = (doc.get("apiVersion"), doc.get("kind"))
    if key in CRDS:
        with open(os.path.join(HERE, "..", "schema", "crds", CRDS[key])) as f:
            return "crd-schema", schema_errors(json.load(f), doc)
    try:
        kubernetes_validate.validate(doc, version, strict=True)
        return "kubernetes", []
    except kubernetes_validate.ValidationError as e:
        return "kubernetes", ["%s: %s" % ("/".join(str(p) for p in e.path) or "(root)", e.message)]
    except kubernetes_validate.SchemaNotFoundError as e:
        return "none", ["no schema for %s %s: %s" % (key[0], key[1], e)]


def main(argv):
    mode = argv[1]
    if mode == "manifests":
        version, files = argv[2], argv[3:]
        out = []
        for path in files:
            for doc in load_docs(path):
                by, errors = check_manifest(doc, version)
                out.append({"file": path, "apiVersion": doc.get("apiVersion"), "kind": doc.get("kind"),
                            "name": (doc.get("metadata") or {}).get("name"), "checkedBy": by, "errors": errors, "doc": doc})
        print(json.dumps({"version": version, "results": out}))
    elif mode == "compose":
        with open(argv[2]) as f:
            schema = json.load(f)
        docs = load_docs(argv[3])
        print(json.dumps({"errors": schema_errors(schema, docs[0]) if len(docs) == 1 else ["expected one YAML document"], "doc": docs[0] if docs else None}))
    elif mode == "yaml":
        print(json.dumps({"docs": load_docs(argv[2])}))
    else:
        raise SystemExit("unknown mode " + mode)


if __name__ == "__main__":
    main(sys.argv)
