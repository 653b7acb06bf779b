{{/* Chart name, truncated to the 63 characters a DNS label allows. */}}
{{- define "fanout-gateway.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "fanout-gateway.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "fanout-gateway.selectorLabels" -}}
app.kubernetes.io/name: {{ include "fanout-gateway.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "fanout-gateway.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "fanout-gateway.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: gateway
{{- end }}

{{- define "fanout-gateway.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "fanout-gateway.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
Whole CPUs in a Kubernetes quantity, rounded up, at least 1: "2" -> 2, "1500m" -> 2, "0.5" -> 1, 250m -> 1.
*/}}
{{- define "fanout-gateway.cpuCeil" -}}
{{- $q := toString . -}}
{{- $cpus := 0.0 -}}
{{- if hasSuffix "m" $q -}}
{{- $cpus = divf (float64 (trimSuffix "m" $q)) 1000 -}}
{{- else -}}
{{- $cpus = float64 $q -}}
{{- end -}}
{{- max 1 (int (ceil $cpus)) -}}
{{- end }}

{{/* WORKERS: gateway.workers when set, else the CPU limit (or request) rounded up, else 1. */}}
{{- define "fanout-gateway.workers" -}}
{{- $res := .Values.resources | default dict -}}
{{- $cpu := or (dig "limits" "cpu" "" $res) (dig "requests" "cpu" "" $res) -}}
{{- if .Values.gateway.workers -}}
{{- .Values.gateway.workers -}}
{{- else if $cpu -}}
{{- include "fanout-gateway.cpuCeil" $cpu -}}
{{- else -}}
1
{{- end -}}
{{- end }}

{{/* Seconds for terminationGracePeriodSeconds: preStop sleep + drain timeout + margin, unless set. */}}
{{- define "fanout-gateway.terminationGrace" -}}
{{- $drain := int (ceil (divf (float64 .Values.gateway.shutdownTimeoutMs) 1000)) -}}
{{- $floor := add (int .Values.preStopSleepSeconds) $drain -}}
{{- if .Values.terminationGracePeriodSeconds -}}
{{- if le (int .Values.terminationGracePeriodSeconds) $floor -}}
{{- fail (printf "terminationGracePeriodSeconds (%v) must exceed preStopSleepSeconds + shutdown drain (%d s)" .Values.terminationGracePeriodSeconds $floor) -}}
{{- end -}}
{{- int .Values.terminationGracePeriodSeconds -}}
{{- else -}}
{{- add $floor 5 -}}
{{- end -}}
{{- end }}

{{/* The non-secret environment as a dict: .Values.config, then the explicit settings (conflicts rejected). */}}
{{- define "fanout-gateway.env" -}}
{{- $explicit := dict
  "PORT" (toString .Values.gateway.port)
  "ADMIN_PORT" (toString .Values.gateway.adminPort)
  "ADMIN_HOST" "0.0.0.0"
  "WORKERS" (include "fanout-gateway.workers" .)
  "LOG_LEVEL" (toString .Values.gateway.logLevel)
  "SHUTDOWN_TIMEOUT" (printf "%dms" (int .Values.gateway.shutdownTimeoutMs))
  "MAX_PAYLOAD_BYTES" (toString (int .Values.gateway.maxPayloadBytes))
  "NATS_URL" (join "," .Values.nats.urls)
  "STREAM_NAME" (toString .Values.stream.name)
  "SUBJECT_PREFIX" (toString .Values.stream.subjectPrefix)
  "STREAM_STORAGE" (toString .Values.stream.storage)
  "STREAM_REPLICAS" (toString (int .Values.stream.replicas))
-}}
{{- range $k, $v := .Values.config }}
{{- if hasKey $explicit $k }}
{{- fail (printf "config.%s conflicts with a dedicated value (gateway.*, nats.urls or stream.*): set it there" $k) }}
{{- end }}
{{- if not (regexMatch "^[A-Za-z_][A-Za-z0-9_]*$" $k) }}
{{- fail (printf "config.%s is not a valid environment variable name" $k) }}
{{- end }}
{{- end }}
{{- if not (has (toString .Values.stream.storage) (list "file" "memory")) }}
{{- fail "stream.storage must be file or memory" }}
{{- end }}
{{- if not (has (int .Values.stream.replicas) (list 1 3 5)) }}
{{- fail "stream.replicas must be 1, 3 or 5" }}
{{- end }}
{{- toYaml (merge (deepCopy $explicit) (.Values.config | default dict)) }}
{{- end }}
