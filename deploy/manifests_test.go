package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// The types k8s.io/api does not have, as far as the manifests use them.
type (
	kustomization struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
		Labels     []struct {
			Pairs            map[string]string `json:"pairs"`
			IncludeSelectors bool              `json:"includeSelectors"`
		} `json:"labels"`
	}
	serviceMonitor struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        metav1.ObjectMeta `json:"metadata"`
		Spec            struct {
			Selector  metav1.LabelSelector `json:"selector"`
			Endpoints []struct {
				Port     string `json:"port"`
				Path     string `json:"path"`
				Interval string `json:"interval"`
			} `json:"endpoints"`
		} `json:"spec"`
	}
	// knativeService is serving.knative.dev/v1 Service: a revision
	// template whose spec is a pod spec with Knative's own fields.
	knativeService struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        metav1.ObjectMeta `json:"metadata"`
		Spec            struct {
			Template struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
				Spec     struct {
					ContainerConcurrency int `json:"containerConcurrency"`
					TimeoutSeconds       int `json:"timeoutSeconds"`
					corev1.PodSpec       `json:",inline"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
)

// decode reads a manifest strictly: a field the type does not have fails.
func decode(data []byte, into any) error { return yaml.UnmarshalStrict(data, into) }

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// envOf finds a container's env var.
func envOf(c corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

// argOf finds a flag's value in a container's args.
func argOf(args []string, flag string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			return args[i+1]
		}
	}
	return ""
}

// podProblems: what docs/deploy.md promises of packd's container in any
// pod spec (Kubernetes, Cloud Run).
func podProblems(spec corev1.PodSpec) []string {
	var p []string
	if len(spec.Containers) != 1 {
		return []string{fmt.Sprintf("%d containers", len(spec.Containers))}
	}
	c := spec.Containers[0]
	probe := func(name string, pr *corev1.Probe, path string) {
		if pr == nil || pr.HTTPGet == nil || pr.HTTPGet.Path != path {
			p = append(p, name+" probe is not GET "+path)
		}
	}
	probe("liveness", c.LivenessProbe, "/healthz")
	probe("startup", c.StartupProbe, "/readyz")
	if tok := envOf(c, "KINDGI_PACK_SERVICE_TOKEN"); tok == nil || tok.ValueFrom == nil || tok.ValueFrom.SecretKeyRef == nil || tok.Value != "" {
		p = append(p, "the token does not come from a secret")
	}
	conc := envOf(c, "KINDGI_PACK_SERVICE_MAX_CONCURRENCY")
	memLimit := argOf(c.Args, "--memory-limit-mib")
	limit, ok := c.Resources.Limits[corev1.ResourceMemory]
	if conc == nil || memLimit == "" || !ok {
		p = append(p, "no concurrency, --memory-limit-mib or memory limit to size the container by")
	} else {
		n, _ := strconv.Atoi(conc.Value)
		m, _ := strconv.Atoi(memLimit)
		// instances' linear memory is half of the budget (the Go heap the other half)
		if need := int64(n) * int64(m) << 20 * 2; limit.Value() < need {
			p = append(p, fmt.Sprintf("memory limit %s is under concurrency x memory limit x 2 = %d MiB", limit.String(), need>>20))
		}
	}
	return p
}

// deploymentProblems: what docs/deploy.md promises of the Deployment.
func deploymentProblems(d appsv1.Deployment) []string {
	spec := d.Spec.Template.Spec
	p := podProblems(spec)
	if len(spec.Containers) != 1 {
		return p
	}
	c := spec.Containers[0]
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		p = append(p, "readiness probe is not GET /readyz")
	}
	var preStop int64
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil {
		p = append(p, "no preStop sleep to let endpoints update")
	} else {
		preStop = c.Lifecycle.PreStop.Sleep.Seconds
	}
	if g := spec.TerminationGracePeriodSeconds; g == nil || *g <= preStop+8 {
		p = append(p, "terminationGracePeriodSeconds is not above the preStop wait plus the 8 s drain")
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		p = append(p, "the root filesystem is not read-only")
	}
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		p = append(p, "privilege escalation is not off")
	}
	if sc == nil || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		p = append(p, "capabilities are not all dropped")
	}
	if psc := spec.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		p = append(p, "runAsNonRoot is not set")
	}
	cache := envOf(c, "PACKD_CACHE_DIR")
	onEmptyDir := false
	for _, m := range c.VolumeMounts {
		for _, v := range spec.Volumes {
			if cache != nil && m.MountPath == cache.Value && m.Name == v.Name && v.EmptyDir != nil {
				onEmptyDir = true
			}
		}
	}
	if !onEmptyDir {
		p = append(p, "the compilation cache (PACKD_CACHE_DIR) is not on an emptyDir")
	}
	return p
}

func kubernetesManifest(t *testing.T, name string, into any) {
	t.Helper()
	if err := decode(read(t, filepath.Join("kubernetes", name)), into); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// TestKubernetesManifests: every manifest decodes strictly as its
// Kubernetes type, kustomization.yaml names them all, and each holds what
// docs/deploy.md promises.
func TestKubernetesManifests(t *testing.T) {
	var k kustomization
	kubernetesManifest(t, "kustomization.yaml", &k)
	files, _ := filepath.Glob(filepath.Join("kubernetes", "*.yaml"))
	for _, f := range files {
		if name := filepath.Base(f); name != "kustomization.yaml" && !slices.Contains(k.Resources, name) {
			t.Errorf("kustomization.yaml does not list %s", name)
		}
	}

	var d appsv1.Deployment
	kubernetesManifest(t, "deployment.yaml", &d)
	if p := deploymentProblems(d); len(p) > 0 {
		t.Errorf("deployment.yaml: %s", strings.Join(p, "; "))
	}
	labels := d.Spec.Template.Labels

	var svc corev1.Service
	kubernetesManifest(t, "service.yaml", &svc)
	ports := map[string]bool{}
	for _, port := range svc.Spec.Ports {
		ports[port.Name] = true
	}
	if !selects(svc.Spec.Selector, labels) || !ports["http"] || !ports["metrics"] {
		t.Errorf("service.yaml does not select the pods on http and metrics")
	}

	var pdb policyv1.PodDisruptionBudget
	kubernetesManifest(t, "pdb.yaml", &pdb)
	if pdb.Spec.MinAvailable == nil || pdb.Spec.Selector == nil || !selects(pdb.Spec.Selector.MatchLabels, labels) {
		t.Errorf("pdb.yaml keeps no replica available")
	}

	var hpa autoscalingv2.HorizontalPodAutoscaler
	kubernetesManifest(t, "hpa.yaml", &hpa)
	cpu := false
	for _, m := range hpa.Spec.Metrics {
		cpu = cpu || m.Resource != nil && m.Resource.Name == corev1.ResourceCPU
	}
	if hpa.Spec.ScaleTargetRef.Name != d.Name || !cpu || hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas < 2 {
		t.Errorf("hpa.yaml does not scale the deployment on CPU from 2 replicas")
	}

	var np networkingv1.NetworkPolicy
	kubernetesManifest(t, "networkpolicy.yaml", &np)
	if !selects(np.Spec.PodSelector.MatchLabels, labels) || len(np.Spec.Ingress) == 0 {
		t.Errorf("networkpolicy.yaml does not guard the pods")
	}
	for _, rule := range np.Spec.Ingress {
		for _, from := range rule.From {
			if from.NamespaceSelector == nil || len(from.NamespaceSelector.MatchLabels) == 0 || from.PodSelector != nil || from.IPBlock != nil {
				t.Errorf("networkpolicy.yaml lets in more than named namespaces: %+v", from)
			}
		}
	}

	var sm serviceMonitor
	kubernetesManifest(t, "servicemonitor.yaml", &sm)
	if sm.Kind != "ServiceMonitor" || len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" || !selects(sm.Spec.Selector.MatchLabels, svc.Labels) {
		t.Errorf("servicemonitor.yaml does not scrape the service's metrics port")
	}
	if a := d.Spec.Template.Annotations; a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] != "9464" {
		t.Errorf("the pods are not annotated for scraping")
	}
}

// selects reports whether a selector's labels all hold in labels.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// TestCloudRunService: the Cloud Run service decodes strictly as a Knative
// Service, takes as many requests per instance as packd's concurrency cap,
// probes /readyz at startup, takes the token from Secret Manager and keeps
// an instance warm.
func TestCloudRunService(t *testing.T) {
	var s knativeService
	if err := decode(read(t, filepath.Join("cloudrun", "service.yaml")), &s); err != nil {
		t.Fatal(err)
	}
	spec := s.Spec.Template.Spec
	if p := podProblems(spec.PodSpec); len(p) > 0 {
		t.Errorf("service.yaml: %s", strings.Join(p, "; "))
	}
	if s.APIVersion != "serving.knative.dev/v1" || s.Kind != "Service" {
		t.Errorf("not a Knative Service: %s %s", s.APIVersion, s.Kind)
	}
	if conc := envOf(spec.Containers[0], "KINDGI_PACK_SERVICE_MAX_CONCURRENCY"); conc == nil || strconv.Itoa(spec.ContainerConcurrency) != conc.Value {
		t.Errorf("containerConcurrency %d is not KINDGI_PACK_SERVICE_MAX_CONCURRENCY", spec.ContainerConcurrency)
	}
	if n, _ := strconv.Atoi(s.Spec.Template.Metadata.Annotations["autoscaling.knative.dev/minScale"]); n < 1 {
		t.Error("no instance is kept warm (minScale)")
	}
}

// TestManifestChecksFail: each promise the checks above hold fails them
// when its field is taken out of the manifest.
func TestManifestChecksFail(t *testing.T) {
	deployment := string(read(t, filepath.Join("kubernetes", "deployment.yaml")))
	checked := 0
	for _, cut := range []string{
		"              path: /healthz\n",
		"          readinessProbe:\n            httpGet:\n              path: /readyz\n",
		"          lifecycle:\n            preStop:\n              sleep:\n                seconds: 5\n",
		"      terminationGracePeriodSeconds: 20\n",
		"            readOnlyRootFilesystem: true\n",
		"            allowPrivilegeEscalation: false\n",
		"            capabilities:\n              drop: [\"ALL\"]\n",
		"        runAsNonRoot: true\n",
		"              valueFrom:\n                secretKeyRef:\n                  name: packd-token\n                  key: token\n",
		"            - name: PACKD_CACHE_DIR\n              value: /cache\n",
		"          emptyDir:\n            sizeLimit: 1Gi\n",
		"            limits:\n              memory: 4Gi\n",
	} {
		if !strings.Contains(deployment, cut) {
			t.Fatalf("deployment.yaml has no %q", cut)
		}
		var d appsv1.Deployment
		if err := decode([]byte(strings.Replace(deployment, cut, "", 1)), &d); err != nil {
			continue // the manifest no longer decodes: that fails too
		}
		checked++
		if len(deploymentProblems(d)) == 0 {
			t.Errorf("removing %q from deployment.yaml goes unnoticed", cut)
		}
	}
	if checked < 10 {
		t.Errorf("only %d of the cuts left a manifest that decodes", checked)
	}
	var d appsv1.Deployment
	if err := decode([]byte(strings.Replace(deployment, "    spec:\n", "    spec:\n      notAField: 1\n", 1)), &d); err == nil {
		t.Error("an unknown field decodes")
	}
}

// registryOverlay is deploy/kubernetes-registry's kustomization.
type registryOverlay struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Patches    []struct {
		Path string `json:"path"`
	} `json:"patches"`
}

// registryProblems: what docs/deploy.md promises of the registry overlay's
// patch of the Deployment (base: the base's deployment).
func registryProblems(patch, base appsv1.Deployment) []string {
	var p []string
	if len(patch.Spec.Template.Spec.Containers) != 1 || len(base.Spec.Template.Spec.Containers) != 1 {
		return []string{"not one container"}
	}
	c, b := patch.Spec.Template.Spec.Containers[0], base.Spec.Template.Spec.Containers[0]
	if c.Name != b.Name || patch.Name != base.Name {
		p = append(p, "the patch does not name the base's Deployment and container")
	}
	if !strings.HasPrefix(argOf(c.Args, "--index"), "oci://") {
		p = append(p, "--index is not an oci:// reference")
	}
	if !slices.Contains(c.Args, "--watch") {
		p = append(p, "no --watch: a moved tag is not pulled")
	}
	// args replace the base's: what the base's checks read must stay.
	if argOf(c.Args, "--memory-limit-mib") != argOf(b.Args, "--memory-limit-mib") {
		p = append(p, "--memory-limit-mib is not the base's")
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range append(base.Spec.Template.Spec.Volumes, patch.Spec.Template.Spec.Volumes...) {
		volumes[v.Name] = v
	}
	mountedAt := func(path string) (corev1.Volume, bool) {
		for _, m := range append(b.VolumeMounts, c.VolumeMounts...) {
			if path == m.MountPath || strings.HasPrefix(path, m.MountPath+"/") {
				v, ok := volumes[m.Name]
				return v, ok
			}
		}
		return corev1.Volume{}, false
	}
	if v, ok := mountedAt(argOf(c.Args, "--trust")); !ok || v.ConfigMap == nil {
		p = append(p, "--trust's key is not from a ConfigMap: an unsigned pack would load")
	}
	if e := envOf(c, "PACKD_OCI_CACHE"); e == nil {
		p = append(p, "no PACKD_OCI_CACHE: the root filesystem is read-only")
	} else if v, ok := mountedAt(e.Value); !ok || v.EmptyDir == nil {
		p = append(p, "PACKD_OCI_CACHE is not on an emptyDir")
	}
	e := envOf(c, "DOCKER_CONFIG")
	if e == nil {
		return append(p, "no DOCKER_CONFIG: the pull has no credentials")
	}
	v, ok := mountedAt(e.Value)
	if !ok || v.Secret == nil || len(v.Secret.Items) != 1 || v.Secret.Items[0].Key != ".dockerconfigjson" || v.Secret.Items[0].Path != "config.json" {
		p = append(p, "DOCKER_CONFIG is not a docker-registry Secret's .dockerconfigjson as config.json")
	}
	return p
}

// TestKubernetesRegistryOverlay: deploy/kubernetes-registry builds on the
// base, and its patch decodes strictly and holds what docs/deploy.md
// promises; taking any of it out is noticed.
func TestKubernetesRegistryOverlay(t *testing.T) {
	dir := "kubernetes-registry"
	var k registryOverlay
	if err := decode(read(t, filepath.Join(dir, "kustomization.yaml")), &k); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(k.Resources, []string{"../kubernetes"}) || len(k.Patches) != 1 {
		t.Fatalf("the overlay is not the base and one patch: %+v", k)
	}
	var base appsv1.Deployment
	kubernetesManifest(t, "deployment.yaml", &base)
	text := string(read(t, filepath.Join(dir, k.Patches[0].Path)))
	var patch appsv1.Deployment
	if err := decode([]byte(text), &patch); err != nil {
		t.Fatal(err)
	}
	if p := registryProblems(patch, base); len(p) > 0 {
		t.Fatalf("%s: %s", k.Patches[0].Path, strings.Join(p, "; "))
	}
	for _, cut := range []string{`"--watch", `, `"--trust", "/trust/ops.pub", `, `, "--memory-limit-mib", "64"`,
		"            - name: PACKD_OCI_CACHE\n              value: /cache/oci\n",
		"            - name: DOCKER_CONFIG\n              value: /docker\n",
		"                path: config.json\n",
		"          configMap:\n            name: packd-trust\n",
	} {
		if !strings.Contains(text, cut) {
			t.Fatalf("the patch has no %q", cut)
		}
		var d appsv1.Deployment
		if err := decode([]byte(strings.Replace(text, cut, "", 1)), &d); err == nil && len(registryProblems(d, base)) == 0 {
			t.Errorf("removing %q from the patch goes unnoticed", cut)
		}
	}
}
