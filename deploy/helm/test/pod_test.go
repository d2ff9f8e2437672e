package test

// The pod around the process: security context and writable directories,
// shutdown grace, disruption budget, the headless Service, the
// ServiceMonitor and runner TLS.

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Non-root, no privilege, read-only root; every path voltro writes is on
// an emptyDir.
func TestSecurityContext(t *testing.T) {
	r := mustRender(t)
	pod := r.sts.Spec.Template.Spec
	ps := pod.SecurityContext
	if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.RunAsUser == nil || *ps.RunAsUser == 0 ||
		ps.SeccompProfile == nil || ps.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v", ps)
	}
	c := r.container(t)
	cs := c.SecurityContext
	if cs == nil || cs.ReadOnlyRootFilesystem == nil || !*cs.ReadOnlyRootFilesystem ||
		cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation ||
		cs.RunAsNonRoot == nil || !*cs.RunAsNonRoot ||
		cs.Capabilities == nil || !slices.Equal(cs.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(cs.Capabilities.Add) != 0 ||
		(cs.Privileged != nil && *cs.Privileged) {
		t.Errorf("container security context %+v", cs)
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	writable := map[string]bool{}
	for _, m := range c.VolumeMounts {
		v, ok := volumes[m.Name]
		switch {
		case !ok:
			t.Errorf("mount %s: no volume %s", m.MountPath, m.Name)
		case m.ReadOnly:
		case v.EmptyDir == nil:
			t.Errorf("mount %s is writable and not an emptyDir: %+v", m.MountPath, v.VolumeSource)
		case v.EmptyDir.SizeLimit == nil:
			t.Errorf("emptyDir %s has no size limit", m.Name)
		default:
			writable[m.MountPath] = true
		}
	}
	// The registry entry (VOLTRO_REGISTRY_DIR) and temporary files.
	if dir := r.env(t, "VOLTRO_REGISTRY_DIR").Value; !writable[dir] || !writable["/tmp"] {
		t.Errorf("writable mounts %v; want VOLTRO_REGISTRY_DIR (%s) and /tmp", writable, dir)
	}
}

// The grace covers the drain: handlers finish, the delivery loop stops (5 s
// at most), the instance leaves.
func TestTerminationGraceCoversTheDrain(t *testing.T) {
	for _, c := range []struct {
		vals string
		want int64
	}{
		{"", 30 + 5 + 10},
		{`drain: {handlerSeconds: 120}`, 120 + 5 + 10},
		{`drain: {handlerSeconds: 0, leaveSeconds: 3}`, 0 + 5 + 3},
		{`terminationGracePeriodSeconds: 600`, 600},
	} {
		r := mustRender(t, c.vals)
		if g := r.sts.Spec.Template.Spec.TerminationGracePeriodSeconds; g == nil || *g != c.want {
			t.Errorf("values %q: terminationGracePeriodSeconds %v, want %d", c.vals, g, c.want)
		}
	}
}

func TestDisruptionBudget(t *testing.T) {
	r := mustRender(t)
	if r.pdb == nil {
		t.Fatal("no PodDisruptionBudget")
	}
	if mu := r.pdb.Spec.MaxUnavailable; mu == nil || *mu != intstr.FromInt32(1) || r.pdb.Spec.MinAvailable != nil {
		t.Errorf("PDB maxUnavailable %v minAvailable %v, want 1 and none", mu, r.pdb.Spec.MinAvailable)
	}
	if sel := r.pdb.Spec.Selector; sel == nil || !selects(sel.MatchLabels, r.sts.Spec.Template.Labels) || len(sel.MatchLabels) == 0 {
		t.Errorf("PDB selector %v does not select the pods %v", sel, r.sts.Spec.Template.Labels)
	}
	if off := mustRender(t, `pdb: {enabled: false}`); off.pdb != nil {
		t.Error("pdb.enabled=false still renders a PDB")
	}
}

// The headless Service the StatefulSet names, with both ports.
func TestHeadlessService(t *testing.T) {
	r := mustRender(t)
	svc := r.svc
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || r.sts.Spec.ServiceName != svc.Name || !svc.Spec.PublishNotReadyAddresses {
		t.Errorf("service %s clusterIP %q publishNotReady %v; StatefulSet serviceName %s", svc.Name, svc.Spec.ClusterIP, svc.Spec.PublishNotReadyAddresses, r.sts.Spec.ServiceName)
	}
	// Were service links on, Kubernetes would set <NAME>_PORT=tcp://… and
	// <NAME>_SERVICE_HOST for this Service: neither may be a variable of the
	// chart's (a Service named voltro-workflow-runner would shadow
	// VOLTRO_WORKFLOW_RUNNER_PORT).
	link := strings.ToUpper(strings.ReplaceAll(svc.Name, "-", "_"))
	for _, e := range r.container(t).Env {
		if strings.HasPrefix(e.Name, link+"_") {
			t.Errorf("the Service %s would shadow %s with a service link variable", svc.Name, e.Name)
		}
	}
	if !selects(svc.Spec.Selector, r.sts.Spec.Template.Labels) || len(svc.Spec.Selector) == 0 {
		t.Errorf("service selector %v does not select the pods %v", svc.Spec.Selector, r.sts.Spec.Template.Labels)
	}
	if !selects(r.sts.Spec.Selector.MatchLabels, r.sts.Spec.Template.Labels) {
		t.Errorf("StatefulSet selector %v does not select its pods", r.sts.Spec.Selector.MatchLabels)
	}
	ports := map[string]corev1.ServicePort{}
	for _, p := range svc.Spec.Ports {
		ports[p.Name] = p
	}
	c := r.container(t)
	for name, want := range map[string]int32{"runner": 34000, "inspect": 9464} {
		p, ok := ports[name]
		if !ok || p.Port != want || p.TargetPort != intstr.FromString(name) || containerPort(t, c, name) != want {
			t.Errorf("service port %s: %+v, want %d to the container port of that name", name, p, want)
		}
	}
	if p := r.env(t, "VOLTRO_WORKFLOW_RUNNER_PORT").Value; p != "34000" {
		t.Errorf("the runner listens on %s, the Service says 34000", p)
	}
}

func TestServiceMonitor(t *testing.T) {
	if r := mustRender(t); r.monitor != nil {
		t.Error("a ServiceMonitor by default")
	}
	r := mustRender(t, `serviceMonitor: {enabled: true, interval: 30s, labels: {release: prom}}`)
	m := r.monitor
	if m == nil {
		t.Fatal("serviceMonitor.enabled renders no ServiceMonitor")
	}
	if m.Labels["release"] != "prom" || !selects(m.Spec.Selector.MatchLabels, r.svc.Labels) || !slices.Equal(m.Spec.NamespaceSelector.MatchNames, []string{namespace}) {
		t.Errorf("ServiceMonitor labels %v selector %v namespaces %v; Service labels %v", m.Labels, m.Spec.Selector.MatchLabels, m.Spec.NamespaceSelector.MatchNames, r.svc.Labels)
	}
	if len(m.Spec.Endpoints) != 1 {
		t.Fatalf("%d endpoints", len(m.Spec.Endpoints))
	}
	ep := m.Spec.Endpoints[0]
	if ep.Port != "inspect" || ep.Path != "/_voltro/metrics" || string(ep.Interval) != "30s" {
		t.Errorf("endpoint port %q path %q interval %q", ep.Port, ep.Path, ep.Interval)
	}
	a := ep.Authorization
	if a == nil || a.Type != "Bearer" || a.Credentials == nil || a.Credentials.Name != "shop-db" || a.Credentials.Key != r.env(t, "VOLTRO_INSPECT_TOKEN").ValueFrom.SecretKeyRef.Key {
		t.Errorf("endpoint authorization %+v, want the inspect token of the pods' Secret", a)
	}
	if !slices.ContainsFunc(r.svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep.Port }) {
		t.Errorf("the Service has no port %q to scrape", ep.Port)
	}
}

func TestRunnerTLS(t *testing.T) {
	plain := mustRender(t)
	for _, e := range plain.container(t).Env {
		if strings.HasPrefix(e.Name, "VOLTRO_RUNNER_TLS_") {
			t.Errorf("TLS off, yet %s is set", e.Name)
		}
	}
	for _, mutual := range []bool{false, true} {
		vals := `runner: {tls: {enabled: true, secretName: runner-tls, serverName: runners.shop, mutual: false}}`
		if mutual {
			vals = strings.Replace(vals, "mutual: false", "mutual: true", 1)
		}
		r := mustRender(t, vals)
		c := r.container(t)
		var mount *corev1.VolumeMount
		for i, m := range c.VolumeMounts {
			if m.MountPath == "/etc/voltro/runner-tls" {
				mount = &c.VolumeMounts[i]
			}
		}
		if mount == nil || !mount.ReadOnly {
			t.Fatalf("mutual=%v: no read-only mount at /etc/voltro/runner-tls: %+v", mutual, c.VolumeMounts)
		}
		var vol *corev1.Volume
		for i, v := range r.sts.Spec.Template.Spec.Volumes {
			if v.Name == mount.Name {
				vol = &r.sts.Spec.Template.Spec.Volumes[i]
			}
		}
		if vol == nil || vol.Secret == nil || vol.Secret.SecretName != "runner-tls" || vol.Secret.DefaultMode == nil || *vol.Secret.DefaultMode&0o007 != 0 {
			t.Fatalf("mutual=%v: TLS volume %+v, want Secret runner-tls unreadable by others", mutual, vol)
		}
		want := map[string]string{
			"VOLTRO_RUNNER_TLS_CERT":        "/etc/voltro/runner-tls/tls.crt",
			"VOLTRO_RUNNER_TLS_KEY":         "/etc/voltro/runner-tls/tls.key",
			"VOLTRO_RUNNER_TLS_SERVER_NAME": "runners.shop",
		}
		if mutual {
			want["VOLTRO_RUNNER_TLS_CA"] = "/etc/voltro/runner-tls/ca.crt"
		}
		got := map[string]string{}
		for _, e := range c.Env {
			if strings.HasPrefix(e.Name, "VOLTRO_RUNNER_TLS_") {
				got[e.Name] = e.Value
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("mutual=%v: TLS env %v, want %v", mutual, got, want)
		}
	}
}

// selects reports whether every label of sel is on labels.
func selects(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}
