package docker

import (
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	d := Config{}.withDefaults()
	for _, bad := range []Config{
		{Instance: "Bad Name"},
		{Common: sandbox.Common{StateDir: "relative"}},
		{Common: sandbox.Common{Defaults: d.Max, Max: d.Defaults}},
		{LogMaxBytes: 10},
		{OrphanGrace: 500 * time.Millisecond},
		{OrphanGrace: -time.Hour},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("accepted %+v", bad)
		}
	}
}
