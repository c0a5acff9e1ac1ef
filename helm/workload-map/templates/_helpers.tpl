{{/* The chart name, or nameOverride. */}}
{{- define "workload-map.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The full name of the release's objects: fullnameOverride, else release name (+ chart name). */}}
{{- define "workload-map.fullname" -}}
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

{{- define "workload-map.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "workload-map.labels" -}}
helm.sh/chart: {{ include "workload-map.chart" . }}
{{ include "workload-map.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: workload-map
{{- end }}

{{/* Labels that select the pods (stable across upgrades). */}}
{{- define "workload-map.selectorLabels" -}}
app.kubernetes.io/name: {{ include "workload-map.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "workload-map.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "workload-map.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The image reference: repository:tag, the tag defaulting to the chart's appVersion. */}}
{{- define "workload-map.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion | toString) }}
{{- end }}

{{/* HorizontalPodAutoscaler API: the override; else autoscaling/v2 when the cluster serves it
(Kubernetes >= 1.23); else autoscaling/v2beta2.  Both the served versions (discovery, on install)
and the Kubernetes version (`helm template --kube-version`, whose default API set lists every
version) decide. */}}
{{- define "workload-map.hpa.apiVersion" -}}
{{- if .Values.autoscaling.apiVersion }}
{{- .Values.autoscaling.apiVersion }}
{{- else if and (.Capabilities.APIVersions.Has "autoscaling/v2") (semverCompare ">=1.23-0" .Capabilities.KubeVersion.Version) }}
{{- print "autoscaling/v2" }}
{{- else if or (.Capabilities.APIVersions.Has "autoscaling/v2beta2") (semverCompare "<1.23-0" .Capabilities.KubeVersion.Version) }}
{{- print "autoscaling/v2beta2" }}
{{- else }}
{{- print "autoscaling/v2" }}
{{- end }}
{{- end }}

{{/* PodDisruptionBudget API: the override; else policy/v1 when the cluster serves it (Kubernetes
>= 1.21); else policy/v1beta1. */}}
{{- define "workload-map.pdb.apiVersion" -}}
{{- if .Values.podDisruptionBudget.apiVersion }}
{{- .Values.podDisruptionBudget.apiVersion }}
{{- else if and (.Capabilities.APIVersions.Has "policy/v1") (semverCompare ">=1.21-0" .Capabilities.KubeVersion.Version) }}
{{- print "policy/v1" }}
{{- else if or (.Capabilities.APIVersions.Has "policy/v1beta1") (semverCompare "<1.21-0" .Capabilities.KubeVersion.Version) }}
{{- print "policy/v1beta1" }}
{{- else }}
{{- print "policy/v1" }}
{{- end }}
{{- end }}

{{/* Whether more than one replica runs (a PodDisruptionBudget then keeps one up). */}}
{{- define "workload-map.multiReplica" -}}
{{- if .Values.autoscaling.enabled }}
{{- if gt (int .Values.autoscaling.minReplicas) 1 }}true{{ end }}
{{- else if gt (int .Values.replicas) 1 }}true
{{- end }}
{{- end }}

{{/* Whether the release serves clusters besides its own (clusters.secrets or clusters.extra). */}}
{{- define "workload-map.fleet" -}}
{{- if or .Values.clusters.secrets.enabled .Values.clusters.extra }}true{{ end }}
{{- end }}

{{/* Where clusters.extra kubeconfigs are mounted: <dir>/<name>/kubeconfig. */}}
{{- define "workload-map.clustersDir" -}}
/etc/workload-map/clusters
{{- end }}

{{/* WLMAP_CLUSTERS for clusters.extra: NAME=FILE[#CONTEXT], comma-joined.  A name used twice
(or the service's own cluster's name) fails the render, as the service would at start. */}}
{{- define "workload-map.clusterFlags" -}}
{{- $home := .Values.clusters.name | default "in-cluster" }}
{{- $seen := dict $home "the service's own cluster (clusters.name)" }}
{{- $flags := list }}
{{- $dir := include "workload-map.clustersDir" . }}
{{- range $i, $c := .Values.clusters.extra }}
{{- if hasKey $seen $c.name }}
{{- fail (printf "clusters.extra[%d]: cluster name %q is already taken by %s" $i $c.name (get $seen $c.name)) }}
{{- end }}
{{- $_ := set $seen $c.name (printf "clusters.extra[%d]" $i) }}
{{- $flag := printf "%s=%s/%s/kubeconfig" $c.name $dir $c.name }}
{{- with $c.context }}
{{- $flag = printf "%s#%s" $flag . }}
{{- end }}
{{- $flags = append $flags $flag }}
{{- end }}
{{- join "," $flags }}
{{- end }}

{{/* Whether the service serves HTTPS (tls.secretName or tls.certManager.enabled). */}}
{{- define "workload-map.tls" -}}
{{- if or .Values.tls.secretName .Values.tls.certManager.enabled }}true{{ end }}
{{- end }}

{{/* The TLS Secret: tls.secretName, else <fullname>-tls (the one the Certificate writes). */}}
{{- define "workload-map.tlsSecret" -}}
{{- .Values.tls.secretName | default (printf "%s-tls" (include "workload-map.fullname" .)) }}
{{- end }}

{{/* The name of the pod's and the Service's port, and the probes' and scrapes' scheme. */}}
{{- define "workload-map.portName" -}}
{{- if include "workload-map.tls" . }}https{{ else }}http{{ end }}
{{- end }}

{{/* Where the TLS Secret is mounted (a directory: the kubelet swaps its files on rotation). */}}
{{- define "workload-map.tlsDir" -}}
/etc/workload-map/tls
{{- end }}

{{/* A ServiceMonitor endpoint's scheme and tlsConfig with TLS on (nothing otherwise):
metrics.serviceMonitor.tlsConfig, else the TLS Secret's ca.crt and the Service's DNS name. */}}
{{- define "workload-map.scrapeTLS" -}}
{{- if include "workload-map.tls" . }}
scheme: https
tlsConfig:
  {{- with .Values.metrics.serviceMonitor.tlsConfig }}
  {{- toYaml . | nindent 2 }}
  {{- else }}
  ca:
    secret:
      name: {{ include "workload-map.tlsSecret" . }}
      key: ca.crt
  serverName: {{ include "workload-map.fullname" . }}.{{ .Release.Namespace }}.svc
  {{- end }}
{{- end }}
{{- end }}

{{/* Whether the release shares its state through a store (store.url or store.bundled): shards and
API replicas then run instead of the single-process Deployment.  Both set fails the render. */}}
{{- define "workload-map.store" -}}
{{- if and .Values.store.url .Values.store.bundled }}
{{- fail "store.url and store.bundled exclude each other: give an existing Redis/Valkey (url) or run the release's own (bundled)" }}
{{- end }}
{{- if or .Values.store.url .Values.store.bundled }}
{{- if not .Values.config.cache }}
{{- fail "a store shares the live model: it cannot be used with config.cache false" }}
{{- end }}
{{- print "true" }}
{{- end }}
{{- end }}

{{/* The name of a part of the release: <fullname>-<part> (api, shards, redis), within 63 characters. */}}
{{- define "workload-map.partName" -}}
{{- printf "%s-%s" (include "workload-map.fullname" .root | trunc (int (sub 62 (len .part))) | trimSuffix "-") .part }}
{{- end }}

{{/* The store's URL (--store): store.url, else the bundled Redis' headless Service. */}}
{{- define "workload-map.storeURL" -}}
{{- if .Values.store.url }}
{{- .Values.store.url }}
{{- else }}
{{- printf "redis://%s.%s.svc:6379/0" (include "workload-map.partName" (dict "root" . "part" "redis")) .Release.Namespace }}
{{- end }}
{{- end }}

{{/* The store's TCP port, for the NetworkPolicy: the URL's, else 6379. */}}
{{- define "workload-map.storePort" -}}
{{- $port := regexFind ":[0-9]+$" (urlParse (include "workload-map.storeURL" .)).host }}
{{- if $port }}{{ trimPrefix ":" $port }}{{ else }}6379{{ end }}
{{- end }}

{{/* Labels selecting the pods of one role ("" for the single process, api, shard): the release's
selector labels, plus app.kubernetes.io/component with a role.  Called with (dict "root" $ "role" ROLE). */}}
{{- define "workload-map.roleSelectorLabels" -}}
{{ include "workload-map.selectorLabels" .root }}
{{- with .role }}
app.kubernetes.io/component: {{ . }}
{{- end }}
{{- end }}

{{/* Labels that select the bundled Redis pod: its own name, so no selector of the service's pods
(NetworkPolicy, PodDisruptionBudget, topology spread) ever matches it. */}}
{{- define "workload-map.redisSelectorLabels" -}}
app.kubernetes.io/name: {{ include "workload-map.name" . }}-redis
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: store
{{- end }}

{{- define "workload-map.redisLabels" -}}
helm.sh/chart: {{ include "workload-map.chart" . }}
{{ include "workload-map.redisSelectorLabels" . }}
app.kubernetes.io/version: {{ .Values.store.redis.image.tag | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: workload-map
{{- end }}

{{/* The API replicas' service account: with serviceAccount.create, <name>-api (no list or watch
of workloads, no Leases); else the one given. */}}
{{- define "workload-map.apiServiceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- printf "%s-api" (include "workload-map.serviceAccountName" . | trunc 59 | trimSuffix "-") }}
{{- else }}
{{- include "workload-map.serviceAccountName" . }}
{{- end }}
{{- end }}

{{/* Whether more than one API replica runs (with a store). */}}
{{- define "workload-map.apiMultiReplica" -}}
{{- if .Values.api.autoscaling.enabled }}
{{- if gt (int .Values.api.autoscaling.minReplicas) 1 }}true{{ end }}
{{- else if gt (int .Values.api.replicas) 1 }}true
{{- end }}
{{- end }}

{{/* With a store and its own service account, the API replicas as one more subject of a binding
(the definition sources, the cluster Secrets): nothing otherwise. */}}
{{- define "workload-map.apiSubject" -}}
{{- if and (include "workload-map.store" .) .Values.serviceAccount.create }}
- kind: ServiceAccount
  name: {{ include "workload-map.apiServiceAccountName" . }}
  namespace: {{ .Release.Namespace }}
{{- end }}
{{- end }}
