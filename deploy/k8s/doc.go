// Package deploy holds glassroom's Kubernetes manifests (a kustomize base,
// `kubectl apply -k deploy/k8s`, and examples/) and the test that builds
// them with kustomize's own library and decodes every object strictly with
// client-go's scheme, asserting the security settings docs/security.md and
// docs/operations.md promise.
package deploy
