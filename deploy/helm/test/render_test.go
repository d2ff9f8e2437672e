package test

// Rendering the chart with Helm's own engine and decoding every manifest
// strictly into the Kubernetes API types: a field the API does not know,
// or one written twice, fails the decode.

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"sigs.k8s.io/yaml"
)

// chartDir is the chart, next to this module.
var chartDir = filepath.Join("..", "voltro")

// The release every test renders.
const (
	releaseName = "shop"
	namespace   = "apps"
	fullname    = "shop-voltro"
)

// baseValues are what a user must give: the image and the Secret.
const baseValues = `
image: {repository: registry.example/shop, tag: "1.4.2"}
secret: {name: shop-db}
`

// rendered is one release's manifests, decoded.
type rendered struct {
	sts     *appsv1.StatefulSet
	svc     *corev1.Service
	pdb     *policyv1.PodDisruptionBudget
	monitor *monitoringv1.ServiceMonitor
	kinds   []string // every manifest's kind, sorted
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	return c
}

// values parses YAML documents and merges them, later ones winning.
func values(t *testing.T, docs ...string) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, d := range docs {
		v, err := chartutil.ReadValues([]byte(d))
		if err != nil {
			t.Fatalf("values %q: %v", d, err)
		}
		out = chartutil.MergeTables(v.AsMap(), out)
	}
	return out
}

// renderChart renders the chart's templates for vals, as helm install
// would, strictly (a template naming a value that does not exist fails).
func renderChart(t *testing.T, vals map[string]any) (map[string]string, error) {
	t.Helper()
	c := loadChart(t)
	opts := chartutil.ReleaseOptions{Name: releaseName, Namespace: namespace, Revision: 1, IsInstall: true}
	rv, err := chartutil.ToRenderValues(c, vals, opts, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	return engine.Engine{Strict: true}.Render(c, rv)
}

// decoder decodes YAML strictly into the types of the API groups the chart
// uses.
func decoder(t *testing.T) runtime.Decoder {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{appsv1.AddToScheme, corev1.AddToScheme, policyv1.AddToScheme, monitoringv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme, kjson.SerializerOptions{Yaml: true, Strict: true})
}

// decodeAll decodes every manifest of files strictly.
func decodeAll(t *testing.T, files map[string]string) rendered {
	t.Helper()
	var r rendered
	dec := decoder(t)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if !strings.HasSuffix(name, ".yaml") {
			continue // NOTES.txt, helpers
		}
		for _, doc := range releaseutil.SplitManifests(files[name]) {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			obj, err := decodeStrict(dec, doc)
			if err != nil {
				t.Fatalf("%s: %v\n%s", name, err, doc)
			}
			r.add(t, name, obj)
		}
	}
	slices.Sort(r.kinds)
	return r
}

// decodeStrict decodes one manifest. The serializer's strict mode reports
// unknown and duplicate fields as a strict-decoding error next to the
// decoded object; either is a failure here.
func decodeStrict(dec runtime.Decoder, doc string) (runtime.Object, error) {
	// The serializer reads YAML through JSON: a YAML-level duplicate key
	// is caught first by converting strictly.
	if _, err := yaml.YAMLToJSONStrict([]byte(doc)); err != nil {
		return nil, fmt.Errorf("strict YAML: %w", err)
	}
	obj, gvk, err := dec.Decode([]byte(doc), nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decode %v: %w", gvk, err)
	}
	return obj, nil
}

func (r *rendered) add(t *testing.T, file string, obj runtime.Object) {
	t.Helper()
	switch o := obj.(type) {
	case *appsv1.StatefulSet:
		r.sts = o
	case *corev1.Service:
		r.svc = o
	case *policyv1.PodDisruptionBudget:
		r.pdb = o
	case *monitoringv1.ServiceMonitor:
		r.monitor = o
	default:
		t.Fatalf("%s: unexpected object %T", file, obj)
	}
	r.kinds = append(r.kinds, obj.GetObjectKind().GroupVersionKind().Kind)
}

// mustRender renders and decodes the chart with the base values and docs
// on top.
func mustRender(t *testing.T, docs ...string) rendered {
	t.Helper()
	files, err := renderChart(t, values(t, append([]string{baseValues}, docs...)...))
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	r := decodeAll(t, files)
	if r.sts == nil || r.svc == nil {
		t.Fatalf("no StatefulSet or Service rendered: %v", r.kinds)
	}
	return r
}

// container is the StatefulSet's one container.
func (r rendered) container(t *testing.T) corev1.Container {
	t.Helper()
	cs := r.sts.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("%d containers, want 1", len(cs))
	}
	return cs[0]
}

// env returns the container's variable name, failing when it is absent.
func (r rendered) env(t *testing.T, name string) corev1.EnvVar {
	t.Helper()
	for _, e := range r.container(t).Env {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("no env %s", name)
	return corev1.EnvVar{}
}
