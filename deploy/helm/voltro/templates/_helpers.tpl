{{/* Names, labels and computed values shared by the templates. */}}

{{- define "voltro.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The StatefulSet's name; pods are <fullname>-<ordinal>. Kept to 52
characters so that the pod names and the controller-revision label fit in
63. */}}
{{- define "voltro.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The headless Service. Never "voltro-workflow-runner": Kubernetes would
inject VOLTRO_WORKFLOW_RUNNER_PORT=tcp://… for it (enableServiceLinks is off
anyway). */}}
{{- define "voltro.serviceName" -}}
{{- printf "%s-runners" (include "voltro.fullname" .) -}}
{{- end -}}

{{- define "voltro.selectorLabels" -}}
app.kubernetes.io/name: {{ include "voltro.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "voltro.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "voltro.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* The shutdown budget: handlers finish, the delivery loop stops (5 s at
most, internal/engine), the instance leaves. */}}
{{- define "voltro.grace" -}}
{{- if kindIs "invalid" .Values.terminationGracePeriodSeconds -}}
{{- add (int .Values.drain.handlerSeconds) 5 (int .Values.drain.leaveSeconds) -}}
{{- else -}}
{{- int .Values.terminationGracePeriodSeconds -}}
{{- end -}}
{{- end -}}

{{- define "voltro.image" -}}
{{- $repo := required "image.repository is required: the application image that embeds voltro" .Values.image.repository -}}
{{- printf "%s:%s" $repo (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "voltro.secretName" -}}
{{- required "secret.name is required: an existing Secret holding DB_URL and the inspect token" .Values.secret.name -}}
{{- end -}}
