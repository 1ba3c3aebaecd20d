// TransactWriteItems for dynalite 4.0.0, which has none (DynamoDB has had it
// since 2018; DynamoDB Local has it too). runtime/dynamostore's ordered
// claims write a call's record and its entity's order record in one
// transaction. Loaded by dynalite-server.js.
//
// What it does, following the DynamoDB API reference: up to 100 actions
// (Put, Update, Delete, ConditionCheck) on distinct items, validated as
// the single-item operations are; every item is locked (dynalite's
// per-item locks, taken in one sorted order, so transactions cannot
// deadlock and single-item writes wait for them), every condition is
// checked against the items as they are, and either all the writes are
// applied or none: a failed condition cancels the transaction with
// TransactionCanceledException and one CancellationReason per action, in
// order ("None" or "ConditionalCheckFailed", with the item when the action
// asks for ReturnValuesOnConditionCheckFailure=ALL_OLD and returnItems is
// set). ClientRequestToken is accepted and ignored (no idempotency
// window).
'use strict'

var fs = require('fs')
var path = require('path')
var Module = require('module')
var db = require('dynalite/db')
var validations = require('dynalite/validations')

// dynalite keeps its update-expression evaluator private to the
// updateItem action: load that file once more with the function exported.
var applyUpdateExpression = (function () {
  var file = require.resolve('dynalite/actions/updateItem')
  var m = new Module(file, module)
  m.filename = file
  m.paths = Module._nodeModulePaths(path.dirname(file))
  m._compile(fs.readFileSync(file, 'utf8') + '\nmodule.exports._applyUpdateExpression = applyUpdateExpression\n', file)
  return m.exports._applyUpdateExpression
})()

var kinds = {
  Put: require('dynalite/validations/putItem'),
  Update: require('dynalite/validations/updateItem'),
  Delete: require('dynalite/validations/deleteItem'),
  ConditionCheck: require('dynalite/validations/deleteItem'),
}

function canceled (reasons) {
  var err = new Error('transaction canceled')
  err.statusCode = 400
  err.body = {
    __type: 'com.amazonaws.dynamodb.v20120810#TransactionCanceledException',
    message: 'Transaction cancelled, please refer cancellation reasons for specific reasons [' +
      reasons.map(function (r) { return r.Code }).join(', ') + ']',
    CancellationReasons: reasons,
  }
  return err
}

// transactWriteItems(store, body, returnItems, cb): cb(err) or cb(null, {}).
module.exports = function transactWriteItems (store, body, returnItems, cb) {
  var items = body && body.TransactItems
  if (!Array.isArray(items) || items.length < 1 || items.length > 100) {
    return cb(db.validationError('1 validation error detected: Value at \'transactItems\' failed to satisfy constraint: ' +
      'Member must have length less than or equal to 100 and greater than or equal to 1'))
  }
  var ops = []
  try {
    items.forEach(function (it) {
      var kind = Object.keys(it || {}).filter(function (k) { return kinds[k] && it[k] })
      if (kind.length != 1) throw db.validationError('TransactItems can only contain one of Check, Put, Update or Delete')
      kind = kind[0]
      var data = Object.assign({}, it[kind])
      var returnOld = data.ReturnValuesOnConditionCheckFailure
      delete data.ReturnValuesOnConditionCheckFailure
      if (returnOld != null && returnOld != 'ALL_OLD' && returnOld != 'NONE') {
        throw db.validationError('1 validation error detected: Value \'' + returnOld + '\' at ' +
          '\'returnValuesOnConditionCheckFailure\' failed to satisfy constraint: Member must satisfy enum value set: [ALL_OLD, NONE]')
      }
      if (kind == 'ConditionCheck' && data.ConditionExpression == null) {
        throw db.validationError('The parameter \'ConditionExpression\' is required but was not present in the request')
      }
      var v = kinds[kind]
      data = validations.checkTypes(data, v.types)
      validations.checkValidations(data, v.types, v.custom, store)
      ops.push({ kind: kind, data: data, returnOld: returnOld == 'ALL_OLD' })
    })
  }
  catch (err) {
    if (err.statusCode) return cb(err)
    throw err
  }

  // Tables and keys.
  var pending = ops.length, failed = false
  ops.forEach(function (op) {
    store.getTable(op.data.TableName, function (err, table) {
      if (failed) return
      if (err) { failed = true; return cb(err) }
      var keyAttrs = op.kind == 'Put' ? op.data.Item : op.data.Key
      var invalid = op.kind == 'Put' ? db.validateItem(keyAttrs, table) : db.validateKey(keyAttrs, table)
      if (invalid != null) { failed = true; return cb(invalid) }
      op.table = table
      op.key = db.createKey(keyAttrs, table)
      if (--pending == 0) run()
    })
  })

  function run () {
    var seen = {}
    for (var i = 0; i < ops.length; i++) {
      var id = ops[i].data.TableName + '\u0000' + ops[i].key
      if (seen[id]) return cb(db.validationError('Transaction request cannot include multiple operations on one item'))
      seen[id] = true
    }
    // Lock every item, table by table in name order, keys sorted.
    var byTable = {}
    ops.forEach(function (op) { (byTable[op.data.TableName] = byTable[op.data.TableName] || []).push(op.key) })
    var tables = Object.keys(byTable).sort()
    var releases = []
    function lockNext (t) {
      if (t == tables.length) return locked()
      store.getItemDb(tables[t]).lock(byTable[tables[t]].sort(), function (release) {
        releases.push(release)
        lockNext(t + 1)
      })
    }
    function done (err, res) {
      // Release in reverse order, then answer.
      var fn = function () { cb(err, res) }
      for (var i = 0; i < releases.length; i++) fn = releases[i](fn)
      fn()
    }
    function locked () {
      var left = ops.length
      ops.forEach(function (op) {
        store.getItemDb(op.data.TableName).get(op.key, function (err, old) {
          if (err && err.name != 'NotFoundError') { op.err = err }
          op.old = err ? undefined : old
          if (--left == 0) decide()
        })
      })
    }
    function decide () {
      for (var i = 0; i < ops.length; i++) if (ops[i].err) return done(ops[i].err)
      var reasons = [], cancel = false
      ops.forEach(function (op) {
        var bad = db.checkConditional(op.data, op.old)
        if (bad) {
          cancel = true
          var r = { Code: 'ConditionalCheckFailed', Message: 'The conditional request failed' }
          if (returnItems && op.returnOld && op.old) r.Item = op.old
          reasons.push(r)
        }
        else {
          reasons.push({ Code: 'None' })
        }
      })
      if (cancel) return done(canceled(reasons))
      // Compute every new item before writing any.
      for (i = 0; i < ops.length; i++) {
        var op = ops[i]
        if (op.kind == 'Put') op.item = op.data.Item
        else if (op.kind == 'Delete') op.item = null
        else if (op.kind == 'Update') {
          var item = op.old ? JSON.parse(JSON.stringify(op.old)) : op.data.Key
          var err = op.data._updates ? applyUpdateExpression(op.data._updates.sections, op.table, item) : null
          if (err) return done(err)
          if (db.itemSize(item) > store.options.maxItemSize) {
            return done(db.validationError('Item size to update has exceeded the maximum allowed size'))
          }
          op.item = item
        }
      }
      var writes = ops.filter(function (op) { return op.kind != 'ConditionCheck' })
      var left = writes.length
      if (left == 0) return done(null, {})
      var firstErr = null
      writes.forEach(function (op) {
        db.updateIndexes(store, op.table, op.old, op.item, function (err) {
          if (err) { firstErr = firstErr || err; if (--left == 0) done(firstErr) ; return }
          var itemDb = store.getItemDb(op.data.TableName)
          var finish = function (err) {
            if (err) firstErr = firstErr || err
            if (--left == 0) done(firstErr, firstErr ? undefined : {})
          }
          if (op.item) itemDb.put(op.key, op.item, finish)
          else itemDb.del(op.key, finish)
        })
      })
    }
    lockNext(0)
  }
}
