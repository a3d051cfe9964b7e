package gateway

import (
	"errors"
	"io"
	"math"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/glassroom/glassroom/api"
	"github.com/glassroom/glassroom/gateway/internal/httperr"
	"github.com/glassroom/glassroom/gateway/internal/tenant"
	"github.com/glassroom/glassroom/gateway/internal/urlsign"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/workspace"
	"github.com/labstack/echo/v4"
)

// Signed file URLs (E2B's files.download_url / upload_url): a client
// with the API key asks for a URL (POST /v1/sessions/{id}/files-url) that
// grants one operation on one file of one session until it expires; a
// browser or a bare HTTP client then uses it without the key, at
// /v1/signed-files/{token}. The token is signed with the gateway's key
// (Config.URLSigningKey; replicas share it), so nothing is stored; it is
// revoked with its session, whose lookup fails once the session ended.
const (
	defaultFileURLLifetime = time.Hour
	maxFileURLLifetime     = 24 * time.Hour
)

// signedFiles mints and serves signed file URLs. Safe for concurrent use.
type signedFiles struct {
	lookup
	signer *urlsign.Signer
	files  *filesAPI
}

// claimsKey is where verify leaves a request's claims.
const claimsKey = "glassroom.signedClaims"

// route registers the minting route on the authenticated /v1 group and
// the signed routes on e, each behind the token's check and the
// forwarding to the session's replica (forward).
func (f *signedFiles) route(v1 *echo.Group, e *echo.Echo, forward echo.MiddlewareFunc) {
	v1.POST("/sessions/:id/files-url", f.mint)
	g := e.Group("/v1/signed-files", f.verify, forward)
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPut, http.MethodPost} {
		g.Add(m, "/:token", f.serve)
	}
}

// sessionOf is the session a verified request's token names (for the
// forwarding middleware).
func sessionOf(c echo.Context) string {
	if cl, ok := c.Get(claimsKey).(urlsign.Claims); ok {
		return cl.Session
	}
	return ""
}

func (f *signedFiles) mint(c echo.Context) error {
	var req api.FileURLRequest
	sess, err := f.sessionRequest(c, &req)
	if err != nil {
		return err
	}
	if req.Operation != urlsign.Read && req.Operation != urlsign.Write {
		return httperr.New(http.StatusBadRequest, "bad_request", "operation must be read or write")
	}
	p, err := workspace.Clean(req.Path)
	if err != nil {
		return err
	}
	if p == "" {
		return httperr.New(http.StatusBadRequest, "bad_path", "a signed URL names a file, not the workspace")
	}
	exp, err := grantExpiry(req.ExpiresS, sess)
	if err != nil {
		return err
	}
	tok := f.signer.Sign(urlsign.Claims{Session: sess.ID(), Tenant: tenant.Of(c), Path: p, Op: req.Operation, Expires: exp.Unix()})
	return c.JSON(http.StatusOK, api.FileURL{URL: "/v1/signed-files/" + tok, Path: p, Operation: req.Operation, ExpiresAt: exp.UTC()})
}

// grantExpiry is when a signed URL asked to last expiresS seconds
// (nil: an hour; at most a day; zero or less: already expired) ends: at
// the session's end at the latest, as it could not outlive it anyway.
func grantExpiry(expiresS *float64, sess *sessions.Session) (time.Time, error) {
	life := defaultFileURLLifetime
	if expiresS != nil {
		s := *expiresS
		if math.IsNaN(s) || math.IsInf(s, 0) || s > maxFileURLLifetime.Seconds() {
			return time.Time{}, httperr.New(http.StatusBadRequest, "bad_request", "expires_s must be at most %v", maxFileURLLifetime.Seconds())
		}
		life = time.Duration(max(s, -maxFileURLLifetime.Seconds()) * float64(time.Second))
	}
	exp := time.Now().Add(life).Truncate(time.Second)
	if end := sess.Info().EndAt; exp.After(end) {
		exp = end.Truncate(time.Second)
	}
	return exp, nil
}

// verify checks the token and that it grants the request's method (GET
// and HEAD read, PUT and POST write), and leaves its claims and tenant
// on the request. A refusal is 401 with E2B's body, which its users match:
// {"code":401,"message":"..."}.
func (f *signedFiles) verify(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		cl, err := f.signer.Verify(c.Param("token"), time.Now())
		switch {
		case errors.Is(err, urlsign.ErrExpired):
			return refuseSigned(c, "signature is already expired")
		case err != nil:
			return refuseSigned(c, "invalid signature")
		}
		want := urlsign.Read
		if m := c.Request().Method; m == http.MethodPut || m == http.MethodPost {
			want = urlsign.Write
		}
		if cl.Op != want {
			return refuseSigned(c, "the signature is for another operation ("+cl.Op+")")
		}
		tenant.Set(c, cl.Tenant)
		c.Set(claimsKey, cl)
		return next(c)
	}
}

func refuseSigned(c echo.Context, msg string) error {
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusUnauthorized, map[string]any{"code": http.StatusUnauthorized, "message": msg})
}

// serve reads or writes the token's file. A session that ended is 404:
// its URLs end with it.
func (f *signedFiles) serve(c echo.Context) error {
	c.Response().Header().Del(ServedByHeader) // a holder of a URL is no client of the API: replica names are not theirs
	cl := c.Get(claimsKey).(urlsign.Claims)
	sess, err := f.mgr.Get(cl.Tenant, cl.Session)
	if err != nil {
		return err
	}
	if cl.Op == urlsign.Read {
		return f.files.serveFile(c, sess, cl.Path)
	}
	if c.Request().Method == http.MethodPut {
		return f.files.writeFile(c, sess, cl.Path, c.Request().Body, nil)
	}
	return f.writeMultipart(c, sess, cl.Path)
}

// writeMultipart stores the one "file" part of a multipart form (what
// E2B's upload URLs take: a browser's form or curl -F) at p; other
// fields are ignored, a second file part is refused. It answers as E2B's
// envd does: 200 and the list of what it stored.
func (f *signedFiles) writeMultipart(c echo.Context, sess *sessions.Session, p string) error {
	if !strings.HasPrefix(c.Request().Header.Get("Content-Type"), "multipart/form-data") {
		return f.files.writeFile(c, sess, p, c.Request().Body, nil) // a raw body, as with PUT
	}
	if c.Request().ContentLength > f.files.maxUpload {
		return f.files.tooLarge()
	}
	c.Request().Body = http.MaxBytesReader(c.Response(), c.Request().Body, f.files.maxUpload)
	mr, err := c.Request().MultipartReader()
	if err != nil {
		return httperr.New(http.StatusBadRequest, "bad_request", "expected a multipart/form-data body")
	}
	var stored *api.UploadedFile
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return f.files.uploadError(httperr.New(http.StatusBadRequest, "bad_request", "malformed multipart body"))
		}
		if part.FormName() != "file" {
			_ = part.Close()
			continue
		}
		if stored != nil {
			return httperr.New(http.StatusBadRequest, "bad_request", "a signed upload URL takes one file part")
		}
		if _, err := sess.Files().Write(p, part); err != nil {
			return f.files.uploadError(err)
		}
		clean, _ := workspace.Clean(p) // Write took it
		stored = &api.UploadedFile{Name: path.Base(clean), Path: path.Join(workspace.SandboxRoot, clean), Type: "file"}
		_ = part.Close()
	}
	if stored == nil {
		return httperr.New(http.StatusBadRequest, "bad_request", "no file part (field name \"file\")")
	}
	return c.JSON(http.StatusOK, []api.UploadedFile{*stored}) // E2B's status and shape
}
