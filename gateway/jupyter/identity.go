package jupyter

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/glassroom/glassroom/gateway/internal/httperr"
	"github.com/glassroom/glassroom/gateway/internal/tenant"
	"github.com/labstack/echo/v4"
)

// /api/me and /api/status, as jupyter_server 2 answers them
// (services/api/handlers.py), for the tenant of the request.

// identityModel is jupyter_server's User model. A tenant's identity is
// made from its tenant id (a hash of its key, never the key).
type identityModel struct {
	Username    string  `json:"username"`
	Name        string  `json:"name"`
	DisplayName string  `json:"display_name"`
	Initials    *string `json:"initials"`
	AvatarURL   *string `json:"avatar_url"`
	Color       *string `json:"color"`
}

func identityOf(t string) identityModel {
	short := t
	if len(short) > 8 {
		short = short[:8]
	}
	initials := "T" + strings.ToUpper(short[:min(1, len(short))])
	return identityModel{Username: "tenant-" + t, Name: "tenant-" + t, DisplayName: "glassroom tenant " + short, Initials: &initials}
}

// servedResources are the Jupyter Server authorization resources a tenant
// has here (its kernels, the kernel specs, its sessions, the api's own
// routes), with every action; the others (contents, terminals, ...) are
// not served, so no action on them is allowed.
var servedResources = map[string]bool{"api": true, "kernels": true, "kernelspecs": true, "sessions": true}

// me is GET /api/me?permissions={"resource": ["action", ...]}: the
// tenant's identity and which of the asked actions it may take (a 400 for
// permissions that are not such an object). updatable_fields is empty:
// the identity is the key's.
func (a *API) me(c echo.Context) error {
	asked := map[string][]string{}
	if p := c.QueryParam("permissions"); p != "" {
		bad := httperr.New(http.StatusBadRequest, "bad_request", `permissions should be a JSON dict of {"resource": ["action",]}`)
		dec := json.NewDecoder(strings.NewReader(p))
		if err := dec.Decode(&asked); err != nil || dec.More() || asked == nil {
			return bad
		}
		for _, actions := range asked {
			if actions == nil {
				return bad
			}
		}
	}
	perms := map[string]any{}
	for resource, actions := range asked {
		allowed := []string{}
		if servedResources[resource] {
			for _, action := range actions {
				if action == "read" || action == "write" || action == "execute" {
					allowed = append(allowed, action)
				}
			}
		}
		perms[resource] = allowed
	}
	perms["updatable_fields"] = []string{}
	return c.JSON(http.StatusOK, map[string]any{"identity": identityOf(tenant.Of(c)), "permissions": perms})
}

// status is GET /api/status: when the gateway's Jupyter API started, the
// tenant's last activity (its kernels', or the start), its kernels and
// their connections.
func (a *API) status(c echo.Context) error {
	t := tenant.Of(c)
	last, kernels, conns := a.started, 0, 0
	for _, info := range a.mgr.List(t) {
		sess, err := a.mgr.Get(t, info.ID)
		if err != nil {
			continue
		}
		kernels++
		conns += sess.Clients()
		if la := sess.LastActivity(); la.After(last) {
			last = la
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"started": formatDate(a.started), "last_activity": formatDate(last),
		"kernels": kernels, "connections": conns})
}

// patchMe is PATCH /api/me: no field of a tenant's identity is updatable
// (a 400, as jupyter_server answers a field not in updatable_fields).
func (a *API) patchMe(c echo.Context) error {
	body, err := a.body.read(c)
	if err != nil {
		return err
	}
	if t := bytes.TrimSpace(body); len(t) == 0 || bytes.Equal(t, []byte("null")) || bytes.Equal(t, []byte("{}")) {
		return httperr.New(http.StatusBadRequest, "bad_request", "Invalid or missing JSON body")
	}
	return httperr.New(http.StatusBadRequest, "bad_request", "no field of the identity is updatable: it is the API key's")
}
