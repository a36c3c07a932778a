{{/* The release's full name, at most 63 characters. */}}
{{- define "mm2-checkpoint.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "mm2-checkpoint.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "mm2-checkpoint.labels" -}}
{{ include "mm2-checkpoint.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "mm2-checkpoint.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "mm2-checkpoint.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "mm2-checkpoint.secretName" -}}
{{- default (include "mm2-checkpoint.fullname" .) .Values.config.existingSecret -}}
{{- end -}}

{{/* The files of the chart-created Secret, membership line appended when on. */}}
{{- define "mm2-checkpoint.configFiles" -}}
{{- $files := deepCopy .Values.config.files -}}
{{- if .Values.membership.enabled -}}
{{- $props := index $files "mm2.properties" -}}
{{- $_ := set $files "mm2.properties" (printf "%s\n# Added by the chart: membership.enabled (docs/membership.md).\nmm2-checkpoint.membership.enabled = true\n" $props) -}}
{{- end -}}
{{- toYaml $files -}}
{{- end -}}

{{/* Refuses settings that would run two writers on one flow. */}}
{{- define "mm2-checkpoint.validate" -}}
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.membership.enabled) -}}
{{- fail "replicaCount > 1 requires membership.enabled: true (two instances without membership both write every flow; docs/membership.md)" -}}
{{- end -}}
{{- if and (not .Values.config.existingSecret) (not (hasKey .Values.config.files "mm2.properties")) -}}
{{- fail "set config.existingSecret, or config.files with an mm2.properties" -}}
{{- end -}}
{{- if not (has .Values.logFormat (list "text" "json")) -}}
{{- fail "logFormat must be text or json" -}}
{{- end -}}
{{- if not (has .Values.podAntiAffinity (list "required" "preferred" "none")) -}}
{{- fail "podAntiAffinity must be required, preferred or none" -}}
{{- end -}}
{{- end -}}
