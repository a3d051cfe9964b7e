package gateway

import (
	"context"
	"net/http"

	"github.com/glassroom/glassroom/api"
	"github.com/glassroom/glassroom/gateway/internal/httperr"
	"github.com/glassroom/glassroom/gateway/internal/tenant"
	"github.com/glassroom/glassroom/volumes"
	"github.com/labstack/echo/v4"
)

// VolumeStore is what the volumes API needs of package volumes' Store.
type VolumeStore interface {
	Create(ctx context.Context, tenant, name string, sizeMB int) (volumes.Info, error)
	List(tenant string) ([]volumes.Info, error)
	Get(tenant, name string) (volumes.Info, error)
	Delete(ctx context.Context, tenant, name string) error
}

// volumesAPI serves /v1/volumes: a tenant's named volumes, which sessions
// mount (CreateSessionRequest.Volumes). Another tenant's volume is a 404.
type volumesAPI struct {
	lookup
	store VolumeStore // nil: no volumes (501)
}

func (v *volumesAPI) route(g *echo.Group) {
	g.POST("/volumes", v.create)
	g.GET("/volumes", v.list)
	g.GET("/volumes/:name", v.get)
	g.DELETE("/volumes/:name", v.delete)
}

var errNoVolumes = httperr.New(http.StatusNotImplemented, "no_volumes", "this gateway keeps no volumes (they need a root gateway on the local or docker runtime)")

func volumeOf(in volumes.Info) api.Volume {
	return api.Volume{Name: in.Name, SizeMB: in.SizeMB, UsedBytes: in.UsedBytes, CreatedAt: in.CreatedAt, Mounts: in.Mounts}
}

func (v *volumesAPI) create(c echo.Context) error {
	if v.store == nil {
		return errNoVolumes
	}
	var req api.CreateVolumeRequest
	if err := v.decodeJSON(c, &req); err != nil {
		return err
	}
	in, err := v.store.Create(c.Request().Context(), tenant.Of(c), req.Name, req.SizeMB)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, volumeOf(in))
}

func (v *volumesAPI) list(c echo.Context) error {
	if v.store == nil {
		return errNoVolumes
	}
	ins, err := v.store.List(tenant.Of(c))
	if err != nil {
		return err
	}
	out := api.VolumeList{Volumes: make([]api.Volume, 0, len(ins))}
	for _, in := range ins {
		out.Volumes = append(out.Volumes, volumeOf(in))
	}
	return c.JSON(http.StatusOK, out)
}

func (v *volumesAPI) get(c echo.Context) error {
	if v.store == nil {
		return errNoVolumes
	}
	in, err := v.store.Get(tenant.Of(c), c.Param("name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, volumeOf(in))
}

func (v *volumesAPI) delete(c echo.Context) error {
	if v.store == nil {
		return errNoVolumes
	}
	if err := v.store.Delete(c.Request().Context(), tenant.Of(c), c.Param("name")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
