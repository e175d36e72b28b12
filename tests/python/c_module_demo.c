/* A Lua C module that uses only the Lua C API (as the C parts of most rocks,
 * e.g. the http rock's http.lib, do), declared here so that no headers are
 * needed: tests/python/test_lua_c_modules.py builds it and loads it on both. */
#include <stddef.h>
typedef struct lua_State lua_State;
typedef int (*lua_CFunction)(lua_State *L);
typedef struct luaL_Reg { const char *name; lua_CFunction func; } luaL_Reg;
/* luaL_Buffer as LuaJIT's lauxlib.h lays it out (LUAL_BUFFERSIZE = BUFSIZ). */
typedef struct luaL_Buffer { char *p; int lvl; lua_State *L; char buffer[8192]; } luaL_Buffer;
#define LUA_REGISTRYINDEX (-10000)
#define LUA_GLOBALSINDEX (-10002)
#define lua_upvalueindex(i) (LUA_GLOBALSINDEX - (i))
extern void luaL_register(lua_State *L, const char *name, const luaL_Reg *l);
extern const char *luaL_checklstring(lua_State *L, int n, size_t *len);
extern long luaL_optinteger(lua_State *L, int n, long def);
extern double luaL_checknumber(lua_State *L, int n);
extern void luaL_checktype(lua_State *L, int n, int t);
extern int luaL_error(lua_State *L, const char *fmt, ...);
extern void luaL_buffinit(lua_State *L, luaL_Buffer *b);
extern void luaL_addlstring(luaL_Buffer *b, const char *s, size_t l);
extern void luaL_pushresult(luaL_Buffer *b);
extern int luaL_newmetatable(lua_State *L, const char *tname);
extern void *luaL_checkudata(lua_State *L, int n, const char *tname);
extern int luaL_ref(lua_State *L, int t);
extern void luaL_unref(lua_State *L, int t, int ref);
extern void *lua_newuserdata(lua_State *L, size_t size);
extern int lua_setmetatable(lua_State *L, int idx);
extern void lua_pushnumber(lua_State *L, double n);
extern void lua_pushinteger(lua_State *L, long n);
extern void lua_pushstring(lua_State *L, const char *s);
extern void lua_pushlstring(lua_State *L, const char *s, size_t l);
extern const char *lua_pushfstring(lua_State *L, const char *fmt, ...);
extern void lua_pushvalue(lua_State *L, int idx);
extern void lua_pushnil(lua_State *L);
extern void lua_pushcclosure(lua_State *L, lua_CFunction fn, int n);
extern void lua_setfield(lua_State *L, int idx, const char *k);
extern void lua_getfield(lua_State *L, int idx, const char *k);
extern void lua_rawgeti(lua_State *L, int idx, int n);
extern void lua_rawset(lua_State *L, int idx);
extern void lua_createtable(lua_State *L, int narr, int nrec);
extern int lua_pcall(lua_State *L, int nargs, int nresults, int errfunc);
extern int lua_gettop(lua_State *L);
extern void lua_settop(lua_State *L, int idx);
extern int lua_type(lua_State *L, int idx);
extern const char *lua_typename(lua_State *L, int tp);
extern double lua_tonumber(lua_State *L, int idx);
extern const char *lua_tolstring(lua_State *L, int idx, size_t *len);
#define LUA_TFUNCTION 6

static int demo_repeat(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  long n = luaL_optinteger(L, 2, 2);
  if (n < 0) return luaL_error(L, "demo.repeat: negative count %d", (int)n);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (long i = 0; i < n; i++) luaL_addlstring(&b, s, len);
  luaL_pushresult(&b);
  return 1;
}

static int demo_apply(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  int nargs = lua_gettop(L) - 1;
  if (lua_pcall(L, nargs, 1, 0) != 0) {
    lua_pushnil(L);
    lua_pushvalue(L, -2);
    return 2;
  }
  return 1;
}

static int demo_types(lua_State *L) {
  int top = lua_gettop(L);
  lua_createtable(L, top, 0);
  for (int i = 1; i <= top; i++) {
    lua_pushfstring(L, "a%d", i);
    lua_pushstring(L, lua_typename(L, lua_type(L, i)));
    lua_rawset(L, -3);
  }
  return 1;
}

struct counter { double value; };

static int counter_new(lua_State *L) {
  struct counter *c = lua_newuserdata(L, sizeof(*c));
  c->value = luaL_checknumber(L, 1);
  luaL_newmetatable(L, "demo.counter");
  lua_setmetatable(L, -2);
  return 1;
}

static int counter_add(lua_State *L) {
  struct counter *c = luaL_checkudata(L, 1, "demo.counter");
  c->value += luaL_checknumber(L, 2);
  lua_pushnumber(L, c->value);
  return 1;
}

static int counter_tostring(lua_State *L) {
  struct counter *c = luaL_checkudata(L, 1, "demo.counter");
  lua_pushfstring(L, "counter(%f)", c->value);
  return 1;
}

static int keep_ref;
static int demo_keep(lua_State *L) {
  lua_pushvalue(L, 1);
  keep_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_pushinteger(L, keep_ref > 0);
  return 1;
}

static int demo_kept(lua_State *L) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, keep_ref);
  luaL_unref(L, LUA_REGISTRYINDEX, keep_ref);
  return 1;
}

static int demo_calls(lua_State *L) {
  lua_pushinteger(L, (long)lua_tonumber(L, lua_upvalueindex(1)) + 1);
  lua_pushvalue(L, -1);
  /* closures keep their upvalues: counts its own calls */
  extern void lua_replace(lua_State *L, int idx);
  lua_replace(L, lua_upvalueindex(1));
  return 1;
}

int luaopen_demo(lua_State *L) {
  static const luaL_Reg funcs[] = {
    {"rep", demo_repeat}, {"apply", demo_apply}, {"types", demo_types},
    {"counter", counter_new}, {"keep", demo_keep}, {"kept", demo_kept}, {NULL, NULL}};
  luaL_newmetatable(L, "demo.counter");
  lua_createtable(L, 0, 1);
  lua_pushcclosure(L, counter_add, 0);
  lua_setfield(L, -2, "add");
  lua_setfield(L, -2, "__index");
  lua_pushcclosure(L, counter_tostring, 0);
  lua_setfield(L, -2, "__tostring");
  lua_settop(L, 0);
  luaL_register(L, "demo", funcs);
  lua_pushinteger(L, 0);
  lua_pushcclosure(L, demo_calls, 1);
  lua_setfield(L, -2, "calls");
  return 1;
}
