package sandbox

import (
	"reflect"
	"strings"
	"testing"
)

// TestLimitsMethodsHandleEveryField: Or, Cap, Exceeds and Validate each
// act on every field of Limits (their field lists are written out: a
// new field one of them forgets fails here).
func TestLimitsMethodsHandleEveryField(t *testing.T) {
	typ := reflect.TypeFor[Limits]()
	set := func(l *Limits, i int, v float64) {
		f := reflect.ValueOf(l).Elem().Field(i)
		switch f.Kind() {
		case reflect.Int:
			f.SetInt(int64(v))
		case reflect.Float64:
			f.SetFloat(v)
		default:
			t.Fatalf("field %s: teach this test its kind %s", typ.Field(i).Name, f.Kind())
		}
	}
	get := func(l Limits, i int) float64 {
		f := reflect.ValueOf(l).Field(i)
		if f.Kind() == reflect.Int {
			return float64(f.Int())
		}
		return f.Float()
	}
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		var def, small, big Limits
		set(&def, i, 4000)
		set(&small, i, 2000)
		set(&big, i, 8000)
		if got := get(Limits{}.Or(def), i); got != 4000 {
			t.Errorf("%s: Or does not fill it (%v)", name, got)
		}
		if got := get(big.Cap(small), i); got != 2000 {
			t.Errorf("%s: Cap does not lower it (%v)", name, got)
		}
		if !big.Exceeds(small) {
			t.Errorf("%s: Exceeds does not compare it", name)
		}
		var neg Limits
		set(&neg, i, -1)
		tag, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if err := neg.Validate(); err == nil || !strings.Contains(err.Error(), tag) {
			t.Errorf("%s: Validate does not check it: %v", name, err)
		}
	}
}
