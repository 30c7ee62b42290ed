import { PGlite, types } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
let t=Date.now();
const db = await PGlite.create({ extensions: { pg_trgm }, startParams: [...PGlite.defaultStartParams, '-c', 'shared_buffers=16MB'] });
console.log('start ms', Date.now()-t, PGlite.defaultStartParams);
await db.exec('create extension if not exists pg_trgm; create table t(id bigint generated always as identity primary key, j jsonb, at timestamptz default now(), n int8)');
let r = await db.query('insert into t(j,n) values ($1::jsonb, $2) returning *', [{a:1}, 5]);
console.log(r);
r = await db.query('insert into t(j,n) values ($1::jsonb, $2) returning *', [JSON.stringify([1,2]), '9007199254740993']);
console.log(r.rows, typeof r.rows[0].n);
r = await db.query('update t set n = 1');
console.log(r);
try { await db.query('insert into t(id) values (1)'); } catch (e) { console.log(Object.keys(e), e.code, e.message, e.detail, e.constructor.name); }
try { await db.query('select $1::int', ['x']); } catch (e) { console.log(e.code, e.message); }
r = await db.query('select $1::int as x', [3]); console.log(r.rows);
r = await db.query('select = any($1::bigint[]) as x', [[1,2]]).catch(e=>e.message); 
r = await db.query('select 1 = any($1::bigint[]) as x, $2::text[] as arr', [[1,2], ['a','b']]); console.log(r.rows);
t=Date.now(); const dump = await db.dumpDataDir('none'); console.log('dump', dump.size, Date.now()-t);
t=Date.now(); const db2 = await PGlite.create({ loadDataDir: dump, extensions: { pg_trgm } }); console.log('load ms', Date.now()-t, (await db2.query('select count(*) from t')).rows);
console.log(process.memoryUsage().rss/1e6);
