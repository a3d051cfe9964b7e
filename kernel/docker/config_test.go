package docker

import "testing"

func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	for _, bad := range []Config{
		{Instance: "Bad Name"},
		{StateDir: "relative"},
		{Defaults: Config{}.withDefaults().Max, Max: Config{}.withDefaults().Defaults},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("accepted %+v", bad)
		}
	}
}
