{{/* The pod template of `wlmap serve` in one role, called with (dict "root" $ "role" ROLE):
"" is the single process (no store: every replica watches and serves everything), "api" answers from
the store and "shard" watches the clusters it claims and writes the store.  The roles differ only in
args, the store's variables, resources, service account and the labels selecting them. */}}
{{- define "workload-map.podTemplate" -}}
{{- $root := .root }}
{{- $role := .role }}
{{- with .root -}}
metadata:
  labels:
    {{- include "workload-map.labels" . | nindent 4 }}
    {{- with $role }}
    app.kubernetes.io/component: {{ . }}
    {{- end }}
    {{- with .Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with .Values.podAnnotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  serviceAccountName: {{ include (ternary "workload-map.apiServiceAccountName" "workload-map.serviceAccountName" (eq $role "api")) . }}
  automountServiceAccountToken: true
  # Service links would inject variables such as WLMAP_PORT=tcp://... for a Service named
  # "wlmap", which the service reads as its own settings.
  enableServiceLinks: false
  {{- with .Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  terminationGracePeriodSeconds: {{ .Values.terminationGracePeriodSeconds }}
  securityContext:
    {{- toYaml .Values.podSecurityContext | nindent 4 }}
  containers:
    - name: workload-map
      image: {{ include "workload-map.image" . | quote }}
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      command: ["wlmap"]
      args: ["serve", "--host", "0.0.0.0", "--port", "8080"
        {{- with $role }}, "--role", {{ . | quote }}, "--store", {{ include "workload-map.storeURL" $root | quote }}{{ end }}
        {{- if eq $role "shard" }}, "--shard-lease", {{ $root.Values.shards.leaseSeconds | int64 | quote }}, "--shard-buckets", {{ $root.Values.shards.buckets | int64 | quote }}{{ end }}]
      env:
        - name: WLMAP_WORKERS
          value: {{ .Values.config.workers | int64 | quote }}
        - name: WLMAP_EVAL_DEADLINE
          value: {{ .Values.config.evalDeadline | toString | quote }}
        - name: WLMAP_EVAL_WORKERS
          value: {{ .Values.config.evalWorkers | int64 | quote }}
        - name: WLMAP_ISOLATION
          value: {{ .Values.config.isolation | quote }}
        - name: WLMAP_MAX_BODY_BYTES
          value: {{ .Values.config.maxBodyBytes | int64 | quote }}
        - name: WLMAP_ALLOW_INLINE_DEFINITIONS
          value: {{ .Values.config.allowInlineDefinitions | toString | quote }}
        - name: WLMAP_ACTIONS
          value: {{ .Values.config.actions | toString | quote }}
        - name: WLMAP_AUTH
          value: {{ .Values.config.auth | quote }}
        - name: WLMAP_NAMESPACE
          value: {{ .Release.Namespace | quote }}
        {{- if .Values.config.configmapName }}
        - name: WLMAP_CONFIGMAP_NAME
          value: {{ .Values.config.configmapName | quote }}
        {{- else }}
        - name: WLMAP_CONFIGMAP_SELECTOR
          value: {{ .Values.config.configmapSelector | quote }}
        {{- end }}
        - name: WLMAP_KARTA_RESOURCES
          value: {{ .Values.config.kartaResources | toString | quote }}
        {{- if and .Values.kartas.manage (ne $role "api") }}
        - name: WLMAP_MANAGE_KARTAS
          value: "true"
        {{- end }}
        - name: WLMAP_LOG_LEVEL
          value: {{ .Values.config.logLevel | quote }}
        - name: WLMAP_JQ_RESULT_CACHE
          value: {{ .Values.config.jqResultCache | toString | quote }}
        - name: WLMAP_GC_THRESHOLDS
          value: {{ .Values.config.gcThresholds | quote }}
        - name: WLMAP_GC_FREEZE
          value: {{ .Values.config.gcFreeze | toString | quote }}
        - name: WLMAP_CACHE
          value: {{ .Values.config.cache | toString | quote }}
        - name: WLMAP_STREAM_BUFFER
          value: {{ .Values.config.streamBuffer | toString | quote }}
        - name: WLMAP_STREAM_WRITE_TIMEOUT
          value: {{ .Values.config.streamWriteTimeout | toString | quote }}
        {{- with .Values.config.watchNamespaces }}
        - name: WLMAP_WATCH_NAMESPACE
          value: {{ join "," . | quote }}
        {{- end }}
        {{- with .Values.clusters }}
        {{- with .name }}
        - name: WLMAP_CLUSTER_NAME
          value: {{ . | quote }}
        {{- end }}
        {{- with .probeInterval }}
        - name: WLMAP_CLUSTER_PROBE_INTERVAL
          value: {{ . | toString | quote }}
        {{- end }}
        {{- if .secrets.enabled }}
        - name: WLMAP_CLUSTER_SECRETS
          value: "true"
        {{- with .secrets.names }}
        # Only these Secrets (one field-selected watch each): what the Role's resourceNames grant.
        - name: WLMAP_CLUSTER_SECRET
          value: {{ join "," . | quote }}
        {{- else }}
        - name: WLMAP_CLUSTER_SECRET_SELECTOR
          value: {{ .secrets.selector | quote }}
        {{- end }}
        {{- if .secrets.allowInsecure }}
        - name: WLMAP_CLUSTER_SECRET_ALLOW_INSECURE
          value: "true"
        {{- end }}
        {{- end }}
        {{- if .extra }}
        - name: WLMAP_CLUSTERS
          value: {{ include "workload-map.clusterFlags" $root | quote }}
        {{- end }}
        {{- end }}
        {{- with .Values.config.tokenAudiences }}
        {{- if eq $root.Values.config.auth "none" }}
        {{- fail "config.tokenAudiences needs config.auth kubernetes (or auto): with none no token is reviewed" }}
        {{- end }}
        - name: WLMAP_TOKEN_AUDIENCE
          value: {{ join "," . | quote }}
        {{- end }}
        {{- with .Values.config.acceleratorResources }}
        - name: WLMAP_ACCELERATOR_RESOURCE
          value: {{ join "," . | quote }}
        {{- end }}
        {{- with .Values.config.gpuResources }}
        - name: WLMAP_GPU_RESOURCE
          value: {{ join "," . | quote }}
        {{- end }}
        {{- if include "workload-map.tls" . }}
        - name: WLMAP_TLS_CERT_FILE
          value: {{ include "workload-map.tlsDir" . }}/tls.crt
        - name: WLMAP_TLS_KEY_FILE
          value: {{ include "workload-map.tlsDir" . }}/tls.key
        {{- end }}
        {{- if $role }}
        - name: WLMAP_STORE_STREAM_LENGTH
          value: {{ .Values.store.streamLength | int64 | quote }}
        {{- with .Values.store.passwordSecret.name }}
        - name: WLMAP_STORE_PASSWORD
          valueFrom:
            secretKeyRef:
              name: {{ . }}
              key: {{ $root.Values.store.passwordSecret.key }}
        {{- end }}
        # The pod's name identifies it in the Leases it holds.
        - name: POD_NAME
          valueFrom:
            fieldRef:
              fieldPath: metadata.name
        {{- end }}
        - name: TMPDIR
          value: /tmp
        {{- with .Values.extraEnv }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      ports:
        - name: {{ include "workload-map.portName" . }}
          containerPort: 8080
          protocol: TCP
      livenessProbe:
        httpGet:
          path: /healthz
          port: {{ include "workload-map.portName" . }}
          {{- if include "workload-map.tls" . }}
          scheme: HTTPS
          {{- end }}
        {{- toYaml .Values.livenessProbe | nindent 8 }}
      readinessProbe:
        httpGet:
          path: /readyz
          port: {{ include "workload-map.portName" . }}
          {{- if include "workload-map.tls" . }}
          scheme: HTTPS
          {{- end }}
        {{- toYaml .Values.readinessProbe | nindent 8 }}
      resources:
        {{- toYaml (index (dict "" .Values.resources "api" .Values.api.resources "shard" .Values.shards.resources) $role) | nindent 8 }}
      securityContext:
        {{- toYaml .Values.securityContext | nindent 8 }}
      volumeMounts:
        - name: tmp
          mountPath: /tmp
        {{- if include "workload-map.tls" . }}
        - name: tls
          mountPath: {{ include "workload-map.tlsDir" . }}
          readOnly: true
        {{- end }}
        {{- range $i, $c := .Values.clusters.extra }}
        - name: cluster-{{ $i }}
          mountPath: {{ include "workload-map.clustersDir" $root }}/{{ $c.name }}
          readOnly: true
        {{- end }}
  volumes:
    - name: tmp
      {{- if or .Values.tmp.medium .Values.tmp.sizeLimit }}
      emptyDir:
        {{- with .Values.tmp.medium }}
        medium: {{ . }}
        {{- end }}
        {{- with .Values.tmp.sizeLimit }}
        sizeLimit: {{ . }}
        {{- end }}
      {{- else }}
      emptyDir: {}
      {{- end }}
    {{- if include "workload-map.tls" . }}
    - name: tls
      secret:
        secretName: {{ include "workload-map.tlsSecret" . }}
    {{- end }}
    {{- range $i, $c := .Values.clusters.extra }}
    # clusters.extra[{{ $i }}]: the kubeconfig of cluster {{ $c.name }}
    - name: cluster-{{ $i }}
      secret:
        secretName: {{ $c.secretName }}
        items:
          - key: {{ $c.key | default "kubeconfig" }}
            path: kubeconfig
    {{- end }}
  {{- if .Values.topologySpread.enabled }}
  topologySpreadConstraints:
    - maxSkew: {{ .Values.topologySpread.maxSkew }}
      topologyKey: {{ .Values.topologySpread.topologyKey }}
      whenUnsatisfiable: {{ .Values.topologySpread.whenUnsatisfiable }}
      labelSelector:
        matchLabels:
          {{- include "workload-map.roleSelectorLabels" (dict "root" $root "role" $role) | nindent 10 }}
  {{- end }}
  {{- with .Values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
{{- end }}
