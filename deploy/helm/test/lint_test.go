package test

// helm lint, through Helm's own lint package: the chart's metadata, its
// values and its templates rendered against the Kubernetes schemas Helm
// knows. Any warning or error fails, as `helm lint --strict` does.

import (
	"testing"

	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
)

func TestHelmLint(t *testing.T) {
	for name, vals := range map[string]map[string]any{
		"defaults":   values(t, baseValues),
		"everything": values(t, baseValues, `{serviceMonitor: {enabled: true}, runner: {tls: {enabled: true, secretName: runner-tls, mutual: true}}, podAntiAffinity: hard}`),
	} {
		linter := lint.All(chartDir, vals, namespace, false)
		for _, m := range linter.Messages {
			if m.Severity >= support.WarningSev {
				t.Errorf("%s: %s", name, m)
			} else {
				t.Logf("%s: %s", name, m)
			}
		}
	}
	// The linter checks the values against values.schema.json (it renders in
	// lint mode, where "required" and "fail" let anything pass).
	linter := lint.All(chartDir, values(t, baseValues, `replicas: 3`), namespace, false)
	if linter.HighestSeverity != support.ErrorSev {
		t.Errorf("lint with a misspelt replicaCount: highest severity %d, want an error; messages %v", linter.HighestSeverity, linter.Messages)
	}
}
