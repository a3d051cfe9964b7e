package k8s

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// problem is what a pod's status says is wrong with it.
type problem struct {
	msg   string
	fatal bool // it will not get better by waiting
}

// imagePullReasons are waiting reasons of an image that cannot be had.
var imagePullReasons = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true,
	"ErrImageNeverPull": true, "RegistryUnavailable": true, "SignatureValidationFailed": true}

// createReasons are waiting reasons of a container that cannot be made.
var createReasons = map[string]bool{"CreateContainerConfigError": true, "CreateContainerError": true,
	"RunContainerError": true, "PreCreateHookError": true, "PreStartHookError": true}

// startProblem reads a pod that is not ready yet: image pulls that fail,
// containers that cannot be created or keep exiting (OOM kills named),
// a pod that failed or is being deleted are fatal; a pod the scheduler
// cannot place is not (a cluster autoscaler may add a node), but its
// message is kept for the timeout's error.
func startProblem(pod *corev1.Pod, memoryMB int) (problem, bool) {
	if pod.DeletionTimestamp != nil {
		return problem{msg: "the pod is being deleted", fatal: true}, true
	}
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return problem{msg: podEnded(pod), fatal: true}, true
	}
	all := append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
	for _, cs := range all {
		if w := cs.State.Waiting; w != nil {
			switch {
			case imagePullReasons[w.Reason]:
				return problem{msg: fmt.Sprintf("image %s of container %s cannot be pulled (%s): %s", cs.Image, cs.Name, w.Reason, short(w.Message)), fatal: true}, true
			case createReasons[w.Reason]:
				return problem{msg: fmt.Sprintf("container %s cannot start (%s): %s", cs.Name, w.Reason, short(w.Message)), fatal: true}, true
			case w.Reason == "CrashLoopBackOff":
				return problem{msg: fmt.Sprintf("container %s keeps exiting: %s", cs.Name, terminated(cs.LastTerminationState.Terminated, cs.Name, memoryMB)), fatal: true}, true
			}
		}
		if t := cs.State.Terminated; t != nil {
			return problem{msg: fmt.Sprintf("container %s exited during start: %s", cs.Name, terminated(t, cs.Name, memoryMB)), fatal: true}, true
		}
		if t := cs.LastTerminationState.Terminated; t != nil {
			return problem{msg: fmt.Sprintf("container %s exited during start: %s", cs.Name, terminated(t, cs.Name, memoryMB)), fatal: true}, true
		}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return problem{msg: fmt.Sprintf("the pod cannot be scheduled (%s): %s", c.Reason, short(c.Message))}, true
		}
	}
	return problem{}, false
}

// podReady reports whether the pod is running, has an IP and is Ready.
func podReady(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podEnded explains a pod that will not run again (evicted, failed).
func podEnded(pod *corev1.Pod) string {
	msg := "pod " + string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		msg += ": " + pod.Status.Reason
	}
	if pod.Status.Message != "" {
		msg += ": " + short(pod.Status.Message)
	}
	return msg
}

// terminated explains a container's end; the kernel container's OOM kill
// is named as the other runtimes name it.
func terminated(t *corev1.ContainerStateTerminated, container string, memoryMB int) string {
	if t == nil {
		return "unknown reason"
	}
	if t.Reason == "OOMKilled" {
		if container == KernelContainer {
			return "OOMKilled: the kernel exceeded its memory limit of " + strconv.Itoa(memoryMB) + " MB"
		}
		return "OOMKilled: the " + container + " container exceeded its memory limit"
	}
	msg := "exit code " + strconv.Itoa(int(t.ExitCode))
	if t.Reason != "" && t.Reason != "Error" && t.Reason != "Completed" {
		msg = t.Reason + ", " + msg
	}
	if t.Message != "" {
		msg += ": " + short(t.Message)
	}
	return msg
}

// kernelGone reports whether the kernel container that ran as containerID
// is gone, and why: terminated, restarted since, or its pod ended.
func kernelGone(pod *corev1.Pod, containerID string, memoryMB int) (string, bool) {
	if pod.DeletionTimestamp != nil {
		return "the pod is being deleted", true
	}
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return podEnded(pod), true
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name != KernelContainer {
			continue
		}
		if t := cs.State.Terminated; t != nil && t.ContainerID == containerID {
			return terminated(t, KernelContainer, memoryMB), true
		}
		if t := cs.LastTerminationState.Terminated; t != nil && t.ContainerID == containerID {
			return terminated(t, KernelContainer, memoryMB), true
		}
		if r := cs.State.Running; r != nil && cs.ContainerID != "" && cs.ContainerID != containerID {
			return "the kernel container restarted", true
		}
	}
	return "", false
}

// runningKernelID returns the ID of the running kernel container, or "".
func runningKernelID(pod *corev1.Pod) string {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == KernelContainer && cs.State.Running != nil {
			return cs.ContainerID
		}
	}
	return ""
}

// short bounds a message from the cluster for errors and logs.
func short(s string) string { return sanitize(s, 300) }
