package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/glassroom/glassroom/api"
	"github.com/glassroom/glassroom/gateway/internal/httperr"
	"github.com/glassroom/glassroom/kernel/kernels"
	"github.com/glassroom/glassroom/sessions"
	"github.com/labstack/echo/v4"
)

// contextsAPI serves the kernels a gateway offers and a session's
// contexts (/v1/kernels, /v1/sessions/{id}/contexts). Safe for
// concurrent use.
type contextsAPI struct {
	lookup
}

func (s *contextsAPI) route(v1 *echo.Group) {
	v1.GET("/kernels", s.listKernels)
	v1.POST("/sessions/:id/contexts", s.createContext)
	v1.GET("/sessions/:id/contexts", s.listContexts)
	v1.DELETE("/sessions/:id/contexts/:ctx", s.deleteContext)
	v1.POST("/sessions/:id/contexts/:ctx/restart", s.restartContext)
	v1.GET("/sessions/:id/contexts/:ctx/kernel_info", s.kernelInfo)
}

// The contexts of a session: POST/GET /v1/sessions/{id}/contexts,
// DELETE /v1/sessions/{id}/contexts/{ctx}, POST .../contexts/{ctx}/restart,
// GET .../contexts/{ctx}/kernel_info, and the languages the gateway runs
// (GET /v1/kernels).

func (s *contextsAPI) listKernels(c echo.Context) error {
	out := []api.Kernel{}
	for _, k := range s.mgr.InstalledKernels() {
		ak := api.Kernel{Name: k.Name, Language: k.Language, DisplayName: k.DisplayName, Aliases: k.Aliases}
		if def, ok := kernels.Lookup(k.Name); ok && def.Name == k.Name {
			ak.Label, ak.Mode, ak.LanguageInfo = def.Label, def.EditorMode, languageInfo(def.Language)
		}
		out = append(out, ak)
	}
	return c.JSON(http.StatusOK, map[string][]api.Kernel{"kernels": out})
}

func (s *contextsAPI) createContext(c echo.Context) error {
	var req api.CreateContextRequest
	sess, err := s.sessionRequest(c, &req)
	if err != nil {
		return err
	}
	if req.Language == "" {
		return httperr.New(http.StatusBadRequest, "bad_request", "field language is required")
	}
	info, err := sess.Contexts().Create(c.Request().Context(), req.Language, req.Cwd)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, info)
}

func (s *contextsAPI) listContexts(c echo.Context) error {
	sess, err := s.session(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string][]sessions.ContextInfo{"contexts": sess.Contexts().List()})
}

func (s *contextsAPI) deleteContext(c echo.Context) error {
	sess, err := s.session(c)
	if err != nil {
		return err
	}
	if err := sess.Contexts().Delete(c.Request().Context(), c.Param("ctx")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *contextsAPI) restartContext(c echo.Context) error {
	sess, err := s.session(c)
	if err != nil {
		return err
	}
	if err := sess.Contexts().Restart(c.Request().Context(), c.Param("ctx")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// kernelInfo answers with the content of a context's kernel_info_reply
// (language_info: the language's name, version, file extension...). The
// session caches it per kernel; it starts no context.
func (s *contextsAPI) kernelInfo(c echo.Context) error {
	sess, err := s.session(c)
	if err != nil {
		return err
	}
	target, err := sess.Contexts().Get(c.Param("ctx"))
	if err != nil {
		return err
	}
	raw, err := target.KernelInfo(c.Request().Context())
	if err != nil {
		return err
	}
	// The kernel is untrusted: pass on a JSON object, nothing else.
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return fmt.Errorf("gateway: kernel_info: the kernel's reply is not a JSON object: %w", sessions.ErrBadKernelReply)
	}
	return c.JSON(http.StatusOK, fields)
}

// languageInfo is li as a JSON object (what api.Kernel carries).
func languageInfo(li kernels.LanguageInfo) map[string]any {
	out := map[string]any{"name": li.Name, "mimetype": li.Mimetype, "file_extension": li.FileExtension}
	if li.CodeMirrorMode != nil {
		out["codemirror_mode"] = li.CodeMirrorMode
	}
	if li.PygmentsLexer != "" {
		out["pygments_lexer"] = li.PygmentsLexer
	}
	if li.NbconvertExporter != "" {
		out["nbconvert_exporter"] = li.NbconvertExporter
	}
	return out
}
