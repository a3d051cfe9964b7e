// Package k8stest gives tests the real single-node cluster that
// scripts/kube-up.sh brings up (`make test` runs it first): a client of
// their own and a namespace of their own under Pod Security "restricted",
// deleted when the test ends. Without a cluster a test is skipped, or
// fails under CI=true. It is imported by tests only.
package k8stest
