package test

// What the rendered chart must say: the deployment contract's environment,
// the Secrets behind the database URL and tokens, token-free probes on the
// inspect port, a non-root read-only container, the disruption budget, the
// shutdown grace, the headless Service and the optional ServiceMonitor and
// runner TLS.

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The whole set of objects, and that every manifest decodes strictly, for
// the defaults and with every option on.
func TestManifestsDecodeStrictly(t *testing.T) {
	if r := mustRender(t); !slices.Equal(r.kinds, []string{"PodDisruptionBudget", "Service", "StatefulSet"}) {
		t.Errorf("defaults render %v", r.kinds)
	}
	all := `
serviceMonitor: {enabled: true, labels: {release: prom}}
runner: {tls: {enabled: true, secretName: runner-tls, mutual: true, serverName: runners.shop}}
cluster: {heartbeat: 5s, shardLock: row, scheduleCoordination: cluster, processName: shop-api}
extraEnv: [{name: DB_MAX_CONNS, value: "8"}]
command: [/app/shop]
args: [serve]
resources: {requests: {cpu: 100m, memory: 128Mi}}
podAntiAffinity: hard
database: {dialect: mariadb}
cdc: false
`
	if r := mustRender(t, all); !slices.Equal(r.kinds, []string{"PodDisruptionBudget", "Service", "ServiceMonitor", "StatefulSet"}) {
		t.Errorf("every option renders %v", r.kinds)
	}
}

// Values the chart refuses, with the message naming what to fix.
func TestRefusedValues(t *testing.T) {
	for _, c := range []struct{ vals, want string }{
		{`secret: {name: shop-db}`, "image.repository is required"},
		{`image: {repository: shop}`, "secret.name is required"},
		{baseValues + `database: {dialect: sqlite}`, "at '/database/dialect': value must be one of 'postgres', 'mariadb', 'mysql'"},
		{baseValues + `runner: {tls: {enabled: true}}`, "runner.tls.secretName is required"},
		{baseValues + `podAntiAffinity: sometimes`, "at '/podAntiAffinity'"},
		{baseValues + `replicas: 3`, "additional properties 'replicas' not allowed"},
		{baseValues + `runner: {port: 0}`, "at '/runner/port'"},
	} {
		_, err := renderChart(t, values(t, c.vals))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("values %q: error %v, want one saying %q", c.vals, err, c.want)
		}
	}
}

// The guide's env, in an order Kubernetes can expand.
func TestDeploymentContractEnv(t *testing.T) {
	r := mustRender(t)
	fieldRef := func(name, path string) {
		t.Helper()
		e := r.env(t, name)
		if e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != path || e.Value != "" {
			t.Errorf("%s: %+v, want the downward API's %s", name, e, path)
		}
	}
	fieldRef("POD_NAME", "metadata.name")
	fieldRef("POD_IP", "status.podIP")
	for name, want := range map[string]string{
		"VOLTRO_WORKFLOW_RUNNER_HOST": "$(POD_IP)",
		"VOLTRO_WORKFLOW_RUNNER_PORT": "34000",
		"DB_DIALECT":                  "postgres",
		"CDC":                         "1",
		"VOLTRO_INSPECT_ADDR":         "[$(POD_IP)]:9464",
		"VOLTRO_REGISTRY_DIR":         "/run/voltro",
		"VOLTRO_PROCESS_NAME":         fullname,
	} {
		if e := r.env(t, name); e.Value != want || e.ValueFrom != nil {
			t.Errorf("%s=%q (from %v), want %q", name, e.Value, e.ValueFrom, want)
		}
	}
	// $(POD_IP) expands only when POD_IP is defined earlier in the list.
	env := r.container(t).Env
	podIP := slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == "POD_IP" })
	for i, e := range env {
		if strings.Contains(e.Value, "$(POD_IP)") && i < podIP {
			t.Errorf("%s refers to $(POD_IP) before POD_IP is defined", e.Name)
		}
	}
	// No Service variables (a Service named voltro-workflow-runner would set
	// VOLTRO_WORKFLOW_RUNNER_PORT=tcp://…).
	if p := r.sts.Spec.Template.Spec.EnableServiceLinks; p == nil || *p {
		t.Errorf("enableServiceLinks %v, want false", p)
	}
	if a := r.sts.Spec.Template.Spec.AutomountServiceAccountToken; a == nil || *a {
		t.Errorf("automountServiceAccountToken %v, want false", a)
	}

	o := mustRender(t, `{database: {dialect: mariadb}, cdc: false, runner: {port: 35000}}`)
	for name, want := range map[string]string{"DB_DIALECT": "mariadb", "CDC": "0", "VOLTRO_WORKFLOW_RUNNER_PORT": "35000"} {
		if e := o.env(t, name); e.Value != want {
			t.Errorf("overridden %s=%q, want %q", name, e.Value, want)
		}
	}
}

// DB_URL and the tokens come from the Secret, the required ones required.
func TestSecretsFromTheSecret(t *testing.T) {
	check := func(r rendered, name, key string, optional bool) {
		t.Helper()
		e := r.env(t, name)
		if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			t.Errorf("%s: %+v, want a secretKeyRef", name, e)
			return
		}
		ref := e.ValueFrom.SecretKeyRef
		if ref.Name != "shop-db" || ref.Key != key || (ref.Optional != nil && *ref.Optional) != optional {
			t.Errorf("%s: secret %s key %s optional %v; want shop-db %s optional %v", name, ref.Name, ref.Key, ref.Optional, key, optional)
		}
	}
	r := mustRender(t)
	check(r, "DB_URL", "DB_URL", false)
	check(r, "VOLTRO_INSPECT_TOKEN", "VOLTRO_INSPECT_TOKEN", false)
	check(r, "VOLTRO_ADMIN_TOKEN", "VOLTRO_ADMIN_TOKEN", true)
	check(r, "VOLTRO_CLUSTER_SECRET", "VOLTRO_CLUSTER_SECRET", true)
	check(r, "VOLTRO_CDC_URL", "VOLTRO_CDC_URL", true)

	o := mustRender(t, `{secret: {keys: {dbUrl: url, inspectToken: tok}}, inspect: {requireToken: false}}`)
	check(o, "DB_URL", "url", false)
	check(o, "VOLTRO_INSPECT_TOKEN", "tok", true)
}

// Probes hit the inspect port on the pod IP (no host: the kubelet dials the
// pod IP, where the inspect server listens) with no header: the token
// would have to be written into the pod spec.
func TestProbes(t *testing.T) {
	r := mustRender(t)
	c := r.container(t)
	inspectPort := containerPort(t, c, "inspect")
	if inspectPort != 9464 {
		t.Errorf("inspect port %d", inspectPort)
	}
	for name, want := range map[string]struct {
		p    *corev1.Probe
		path string
	}{
		"startup":   {c.StartupProbe, "/_voltro/health/live"},
		"liveness":  {c.LivenessProbe, "/_voltro/health/live"},
		"readiness": {c.ReadinessProbe, "/_voltro/health/ready"},
	} {
		p := want.p
		if p == nil || p.HTTPGet == nil {
			t.Errorf("%s probe: %+v, want an httpGet", name, p)
			continue
		}
		g := p.HTTPGet
		if g.Path != want.path || g.Port != intstr.FromString("inspect") || g.Host != "" || len(g.HTTPHeaders) != 0 || (g.Scheme != "" && g.Scheme != corev1.URISchemeHTTP) {
			t.Errorf("%s probe: %+v, want GET %s on port inspect, no host, no headers", name, g, want.path)
		}
		if p.TimeoutSeconds < 1 || p.PeriodSeconds < p.TimeoutSeconds {
			t.Errorf("%s probe: timeout %d s, period %d s", name, p.TimeoutSeconds, p.PeriodSeconds)
		}
	}
	if s := c.StartupProbe; s != nil && s.PeriodSeconds*s.FailureThreshold < 60 {
		t.Errorf("startup probe gives a first boot %d s, want at least 60 for migrations", s.PeriodSeconds*s.FailureThreshold)
	}
	if ip := r.env(t, "VOLTRO_INSPECT_ADDR").Value; !strings.HasSuffix(ip, ":9464") {
		t.Errorf("VOLTRO_INSPECT_ADDR=%s does not listen on the probed port 9464", ip)
	}
	if p := mustRender(t, `inspect: {port: 9100}`); containerPort(t, p.container(t), "inspect") != 9100 || p.env(t, "VOLTRO_INSPECT_ADDR").Value != "[$(POD_IP)]:9100" {
		t.Errorf("inspect.port=9100 does not move both the listener and the probed port")
	}
}

func containerPort(t *testing.T, c corev1.Container, name string) int32 {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	t.Fatalf("no container port %s", name)
	return 0
}
