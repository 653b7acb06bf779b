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
  "HOST" (toString .Values.gateway.host)
  "ADMIN_PORT" (toString .Values.gateway.adminPort)
  "ADMIN_HOST" "0.0.0.0"
  "WORKERS" (include "fanout-gateway.workers" .)
  "LOG_LEVEL" (toString .Values.gateway.logLevel)
  "SHUTDOWN_TIMEOUT" (printf "%dms" (int .Values.gateway.shutdownTimeoutMs))
  "MAX_PAYLOAD_BYTES" (toString (int .Values.gateway.maxPayloadBytes))
  "NATS_URL" (join "," .Values.nats.urls)
  "SUBJECT_PREFIX" (toString .Values.stream.subjectPrefix)
  "STREAM_STORAGE" (toString .Values.stream.storage)
  "STREAM_REPLICAS" (toString (int .Values.stream.replicas))
-}}
{{- $explicit = merge $explicit (include "fanout-gateway.natsSecurityEnv" . | fromYaml) }}
{{- if .Values.stream.name }}
{{- $_ := set $explicit "STREAM_NAME" (toString .Values.stream.name) }}
{{- end }}
{{- $explicit = merge $explicit (include "fanout-gateway.regionEnv" . | fromYaml) }}
{{- if .Values.namespaces }}
{{- $_ := set $explicit "NAMESPACES_FILE" (printf "%s/namespaces.yaml" (include "fanout-gateway.namespacesDir" .)) }}
{{- end }}
{{- range $k, $v := .Values.config }}
{{- if or (hasKey $explicit $k) (hasPrefix "NATS_TLS_" $k) (has $k (list "STREAM_NAME" "NATS_CREDS_FILE" "NATS_NKEY_SEED_FILE" "NATS_USER" "NATS_PASSWORD_FILE" "NATS_TOKEN_FILE" "REGION" "REGIONS" "HOME_REGION" "REGION_RESUME_WAIT")) }}
{{- fail (printf "config.%s conflicts with a dedicated value (gateway.*, nats.*, stream.*, region.*, namespaces): set it there" $k) }}
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

{{/* REGION, REGIONS, HOME_REGION, REGION_RESUME_WAIT from region.*, when region.name is set; checked as the gateway does. */}}
{{- define "fanout-gateway.regionEnv" -}}
{{- $r := .Values.region | default dict -}}
{{- $all := $r.all | default list -}}
{{- if $r.name }}
{{- if not (has $r.name $all) }}{{ fail (printf "region.all must list region.name (%s)" $r.name) }}{{ end -}}
{{- if and $r.home (not (has $r.home $all)) }}{{ fail (printf "region.home (%s) must be one of region.all" $r.home) }}{{ end -}}
{{- if ne (len $all) (len (uniq $all)) }}{{ fail "region.all names a region twice" }}{{ end -}}
REGION: {{ $r.name | quote }}
REGIONS: {{ join "," $all | quote }}
{{- if $r.home }}
HOME_REGION: {{ $r.home | quote }}
{{- end }}
REGION_RESUME_WAIT: {{ printf "%dms" (int ($r.resumeWaitMs | default 2000)) | quote }}
{{- else if or $all $r.home }}
{{- fail "region.all and region.home need region.name (the region this release runs in)" }}
{{- end }}
{{- end }}

{{/* Where the NATS credential and TLS Secrets are mounted. */}}
{{- define "fanout-gateway.namespacesDir" -}}/etc/fanout-gateway/namespaces{{- end }}
{{- define "fanout-gateway.natsAuthDir" -}}/etc/fanout-gateway/nats-auth{{- end }}
{{- define "fanout-gateway.natsTlsDir" -}}/etc/fanout-gateway/nats-tls{{- end }}

{{/* NATS_*_FILE settings pointing into the mounted Secrets (nats.auth, nats.tls), checked for one way in. */}}
{{- define "fanout-gateway.natsSecurityEnv" -}}
{{- $a := .Values.nats.auth | default dict -}}
{{- $t := .Values.nats.tls | default dict -}}
{{- $ad := include "fanout-gateway.natsAuthDir" . -}}
{{- $td := include "fanout-gateway.natsTlsDir" . -}}
{{- $env := dict -}}
{{- $ways := list -}}
{{- if $a.credsKey }}{{ $_ := set $env "NATS_CREDS_FILE" (printf "%s/%s" $ad $a.credsKey) }}{{ $ways = append $ways "credsKey" }}{{ end -}}
{{- if $a.nkeySeedKey }}{{ $_ := set $env "NATS_NKEY_SEED_FILE" (printf "%s/%s" $ad $a.nkeySeedKey) }}{{ $ways = append $ways "nkeySeedKey" }}{{ end -}}
{{- if or $a.user $a.passwordKey }}
{{- if not (and $a.user $a.passwordKey) }}{{ fail "nats.auth.user and nats.auth.passwordKey go together" }}{{ end -}}
{{- $_ := set $env "NATS_USER" (toString $a.user) }}{{ $_ := set $env "NATS_PASSWORD_FILE" (printf "%s/%s" $ad $a.passwordKey) }}{{ $ways = append $ways "user" }}
{{- end -}}
{{- if $a.tokenKey }}{{ $_ := set $env "NATS_TOKEN_FILE" (printf "%s/%s" $ad $a.tokenKey) }}{{ $ways = append $ways "tokenKey" }}{{ end -}}
{{- if gt (len $ways) 1 }}{{ fail (printf "nats.auth: give one way to authenticate, not %s" (join " and " $ways)) }}{{ end -}}
{{- if and $ways (not $a.secretName) }}{{ fail "nats.auth.secretName: the Secret holding the NATS credential is missing" }}{{ end -}}
{{- if $t.caKey }}{{ $_ := set $env "NATS_TLS_CA_FILE" (printf "%s/%s" $td $t.caKey) }}{{ end -}}
{{- if or $t.certKey $t.keyKey }}
{{- if not (and $t.certKey $t.keyKey) }}{{ fail "nats.tls.certKey and nats.tls.keyKey go together" }}{{ end -}}
{{- $_ := set $env "NATS_TLS_CERT_FILE" (printf "%s/%s" $td $t.certKey) }}{{ $_ := set $env "NATS_TLS_KEY_FILE" (printf "%s/%s" $td $t.keyKey) }}
{{- end -}}
{{- if and (or $t.caKey $t.certKey) (not $t.secretName) }}{{ fail "nats.tls.secretName: the Secret holding the NATS CA or client certificate is missing" }}{{ end -}}
{{- if $t.handshakeFirst }}{{ $_ := set $env "NATS_TLS_FIRST" "true" }}{{ end -}}
{{- toYaml $env }}
{{- end }}
